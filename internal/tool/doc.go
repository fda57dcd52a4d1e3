// Package tool is the contract of agentd's built-in tools, shared by the control plane (which
// shows the tools to the model and runs some of them) and the runtime inside the sandbox (which
// runs the others).
//
// For every tool it holds the name, the description the model reads, the argument struct with
// its JSON Schema, and the shape of the observation the tool answers with: the OpenHands
// observation object (TerminalObservation, FileEditorObservation, ...), so that events look the
// same to OpenHands clients. Arguments are decoded with package wire; a bad argument is not a
// transport error but a [Result] with IsError set whose text tells the model what to fix.
//
// The tools that touch the sandbox live in child packages: terminal (a persistent bash on a
// pty), fileeditor and search (glob and grep). The control-plane tools (think, finish,
// task_tracker) are pure and live here.
package tool
