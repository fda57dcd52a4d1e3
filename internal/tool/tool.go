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
		New(Terminal, terminalDescription, Sandbox, false, KindTerminal, TerminalArgs{}),
		New(FileEditor, fileEditorDescription, Sandbox, false, KindFileEditor, FileEditorArgs{}),
		New(Glob, globDescription, Sandbox, true, KindGlob, GlobArgs{}),
		New(Grep, grepDescription, Sandbox, true, KindGrep, GrepArgs{}),
		New(TaskTracker, taskTrackerDescription, ControlPlane, false, KindTaskTracker, TaskTrackerArgs{}),
		New(Think, thinkDescription, ControlPlane, true, KindThink, ThinkArgs{}),
		New(Finish, finishDescription, ControlPlane, true, KindFinish, FinishArgs{}),
	}
	return tools
})

// New describes a tool whose arguments are the struct args (a value, not a pointer), decoded
// with package wire. The built-in tools are made with it, and so are the tools a conversation
// has beside them (its git provider's).
func New(name, desc string, place Place, readOnly bool, kind string, args any) Tool {
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

// WithParamDocs returns t with the descriptions of some parameters replaced: for tools whose
// parameters are best described in words known only when the tool is offered (a provider's
// name for its pull requests, the conversation's repository). A name that is not a parameter
// is a programming error.
func (t Tool) WithParamDocs(docs map[string]string) Tool {
	base := t.schema
	t.schema = sync.OnceValue(func() []byte {
		var m map[string]any
		if err := json.Unmarshal(base(), &m); err != nil {
			panic("tool: " + t.Name + ": schema: " + err.Error())
		}
		props, _ := m["properties"].(map[string]any)
		for name, doc := range docs {
			p, ok := props[name].(map[string]any)
			if !ok {
				panic("tool: " + t.Name + ": no parameter " + name)
			}
			p["description"] = doc
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic("tool: " + t.Name + ": schema: " + err.Error())
		}
		return b
	})
	return t
}

// NewRaw describes a tool whose argument schema comes from elsewhere (an MCP server's): its
// arguments are a json.RawMessage, checked only for being one JSON object and passed on as
// the model wrote them, less the agent's own summary and security_risk. schema must be a JSON
// object.
func NewRaw(name, desc string, place Place, readOnly bool, kind string, schema json.RawMessage) Tool {
	schema = slices.Clone(schema)
	return Tool{
		Name:            name,
		Description:     desc,
		Place:           place,
		ReadOnly:        readOnly,
		ObservationKind: kind,
		args:            reflect.TypeOf(json.RawMessage{}),
		schema:          func() []byte { return schema },
	}
}
