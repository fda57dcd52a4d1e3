package tool

import (
	"encoding/json"
	"reflect"
	"slices"
	"sync"
)

// Tool names, as the model calls them.
const (
	Terminal    = "terminal"
	FileEditor  = "file_editor"
	Glob        = "glob"
	Grep        = "grep"
	Think       = "think"
	Finish      = "finish"
	TaskTracker = "task_tracker"
)

// Place says where a tool runs.
type Place int

const (
	// Sandbox tools run in `agentd runtime`, reached through runtime.Client.Tool.
	Sandbox Place = iota + 1
	// ControlPlane tools run in the conversation's runner and never reach the sandbox.
	ControlPlane
)

func (p Place) String() string {
	switch p {
	case Sandbox:
		return "sandbox"
	case ControlPlane:
		return "control_plane"
	}
	return "unknown"
}

// Tool describes one built-in tool.
type Tool struct {
	Name string
	// Description tells the model what the tool does and how to call it well.
	Description string
	Place       Place
	// ReadOnly tools change nothing (the agent needs no confirmation for them).
	ReadOnly bool
	// ObservationKind is the "kind" of the tool's observation object.
	ObservationKind string
	// args is the argument struct type; schema is its JSON Schema, built once.
	args   reflect.Type
	schema func() []byte
}

// Parameters returns the JSON Schema of the tool's arguments, as LLM APIs take it: an object
// schema with type, properties, required and additionalProperties, every $ref inlined. Each
// call returns a fresh copy the caller may change (to add "summary" or "security_risk").
func (t Tool) Parameters() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(t.schema(), &m); err != nil {
		panic("tool: " + t.Name + ": schema: " + err.Error())
	}
	return m
}

// NewArgs returns a pointer to a zero value of the tool's argument struct, e.g. *TerminalArgs.
func (t Tool) NewArgs() any { return reflect.New(t.args).Interface() }

// registry is built on first use; its order is the order tools are offered to the model.
var registry = sync.OnceValue(func() []Tool {
	tools := []Tool{
		newTool(Terminal, terminalDescription, Sandbox, false, KindTerminal, TerminalArgs{}),
		newTool(FileEditor, fileEditorDescription, Sandbox, false, KindFileEditor, FileEditorArgs{}),
		newTool(Glob, globDescription, Sandbox, true, KindGlob, GlobArgs{}),
		newTool(Grep, grepDescription, Sandbox, true, KindGrep, GrepArgs{}),
		newTool(TaskTracker, taskTrackerDescription, ControlPlane, false, KindTaskTracker, TaskTrackerArgs{}),
		newTool(Think, thinkDescription, ControlPlane, true, KindThink, ThinkArgs{}),
		newTool(Finish, finishDescription, ControlPlane, true, KindFinish, FinishArgs{}),
	}
	return tools
})

func newTool(name, desc string, place Place, readOnly bool, kind string, args any) Tool {
	t := reflect.TypeOf(args)
	return Tool{
		Name:            name,
		Description:     desc,
		Place:           place,
		ReadOnly:        readOnly,
		ObservationKind: kind,
		args:            t,
		schema:          sync.OnceValue(func() []byte { return mustSchema(name, args) }),
	}
}

// Builtin returns every built-in tool, sandbox tools first.
func Builtin() []Tool { return slices.Clone(registry()) }

// Lookup returns the built-in tool called name.
func Lookup(name string) (Tool, bool) {
	for _, t := range registry() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// InSandbox reports whether name is a built-in tool that runs in the sandbox's runtime.
func InSandbox(name string) bool {
	t, ok := Lookup(name)
	return ok && t.Place == Sandbox
}
