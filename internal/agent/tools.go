package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/tool"
)

// toolKinds are the OpenHands class names of each tool and its action.
var toolKinds = map[string]struct{ tool, action string }{
	tool.Terminal:    {"TerminalTool", "TerminalAction"},
	tool.FileEditor:  {"FileEditorTool", "FileEditorAction"},
	tool.Glob:        {"GlobTool", "GlobAction"},
	tool.Grep:        {"GrepTool", "GrepAction"},
	tool.TaskTracker: {"TaskTrackerTool", "TaskTrackerAction"},
	tool.Think:       {"ThinkTool", "ThinkAction"},
	tool.Finish:      {"FinishTool", "FinishAction"},
}

// aliases are names models use for the built-in tools, from other agents' tool sets.
var aliases = map[string]string{
	"bash": tool.Terminal, "execute_bash": tool.Terminal, "execute_command": tool.Terminal,
	"command": tool.Terminal, "shell": tool.Terminal, "run": tool.Terminal,
	"str_replace_editor": tool.FileEditor, "str_replace_based_edit_tool": tool.FileEditor,
	"str_replace": tool.FileEditor, "edit_file": tool.FileEditor,
}

// summaryParam is added to every tool's parameters: a few words the user sees beside the
// action. It is optional and never reaches the tool.
var summaryParam = map[string]any{
	"type":        "string",
	"description": "A short summary (about ten words) of what this call does, shown to the user.",
}

// toolset is what the model is offered: the built-in tools, then the conversation's own
// (its git provider's), which the Executor runs.
type toolset struct{ extra []tool.Tool }

func (ts toolset) all() []tool.Tool { return append(tool.Builtin(), ts.extra...) }

func (ts toolset) lookup(name string) (tool.Tool, bool) {
	if t, ok := tool.Lookup(name); ok {
		return t, true
	}
	for _, t := range ts.extra {
		if t.Name == name {
			return t, true
		}
	}
	return tool.Tool{}, false
}

// kinds returns the class names of a tool and its action: OpenHands' for the built-in
// tools, and for the others the same pattern on the tool's name (read_issue: ReadIssueTool,
// ReadIssueAction).
func kinds(name string) (toolKind, actionKind string) {
	if k, ok := toolKinds[name]; ok {
		return k.tool, k.action
	}
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Tool", b.String() + "Action"
}

// specs returns the tools offered to the model, in order. The built-in tools' specs are
// made once for the process and shared by every conversation (only read, by the model
// clients): the same dozen schemas would otherwise be held again by every running
// conversation.
func (ts toolset) specs() []llm.ToolSpec {
	builtin := builtinSpecs()
	return append(builtin[:len(builtin):len(builtin)], specsOf(ts.extra)...)
}

// builtinSpecs are the specs of the built-in tools.
var builtinSpecs = sync.OnceValue(func() []llm.ToolSpec { return specsOf(tool.Builtin()) })

// specsOf returns the specs of tools: each with its parameters, the summary every call may
// give, and the security risk of a call that changes something.
func specsOf(tools []tool.Tool) []llm.ToolSpec {
	var specs []llm.ToolSpec
	for _, t := range tools {
		params := t.Parameters()
		props, _ := params["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			params["properties"] = props
		}
		props["summary"] = summaryParam
		if !t.ReadOnly {
			// As OpenHands' LLM security analyzer: the model rates every call that changes
			// something; the confirmation policy reads the rating.
			props["security_risk"] = confirm.RiskParam()
		}
		b, err := json.Marshal(params)
		if err != nil {
			panic("agent: tool schema of " + t.Name + ": " + err.Error())
		}
		specs = append(specs, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: b})
	}
	return specs
}

// definitions are the tools as the SystemPromptEvent lists them.
func (ts toolset) definitions() []json.RawMessage {
	var out []json.RawMessage
	for _, t := range ts.all() {
		toolKind, actionKind := kinds(t.Name)
		b, _ := json.Marshal(map[string]any{
			"kind": toolKind, "title": t.Name, "description": t.Description,
			"action_type": actionKind, "observation_type": t.ObservationKind,
			"annotations": map[string]any{"readOnlyHint": t.ReadOnly},
		})
		out = append(out, b)
	}
	return out
}

// call is one tool call of the model, checked against the tools.
type call struct {
	llm llm.ToolCall
	// name is the tool's name after alias resolution (the model's name if unknown).
	name string
	tool tool.Tool
	// args is the decoded argument struct (*tool.TerminalArgs, ...), argsJSON its JSON.
	args     any
	argsJSON json.RawMessage
	// action is the action object recorded in the ActionEvent; nil for an invalid call.
	action  json.RawMessage
	summary *string
	// rated is the model's security_risk argument, as given.
	rated string
	// problem is the error the model sees for an invalid call.
	problem string
}

// parseCall validates one tool call. An invalid call has problem set.
func (ts toolset) parseCall(tc llm.ToolCall) call {
	c := call{llm: tc, name: tc.Name}
	t, ok := ts.lookup(tc.Name)
	if !ok {
		if real, isAlias := aliases[strings.ToLower(tc.Name)]; isAlias {
			t, ok = tool.Lookup(real)
			c.name = real
		}
	}
	if !ok {
		var names []string
		for _, t := range ts.all() {
			names = append(names, t.Name)
		}
		c.problem = fmt.Sprintf("Tool %q does not exist. Available tools: %s.", tc.Name, strings.Join(names, ", "))
		return c
	}
	c.tool = t
	raw := json.RawMessage(tc.Arguments)
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		if s, ok := obj["summary"].(string); ok {
			c.summary = &s
		}
		c.rated, _ = obj["security_risk"].(string)
		if c.name == tool.FileEditor && obj["command"] == nil {
			// Models that know a different editor leave the command out; the arguments
			// given say which one was meant.
			if cmd := inferEditorCommand(obj); cmd != "" {
				obj["command"] = cmd
				raw, _ = json.Marshal(obj)
			}
		}
	}
	args := t.NewArgs()
	if err := t.DecodeArgs(raw, args); err != nil {
		var ae *tool.ArgsError
		if errors.As(err, &ae) {
			c.problem = ae.Error()
		} else {
			c.problem = fmt.Sprintf("Invalid arguments for tool %s: %v", c.name, err)
		}
		return c
	}
	b, err := json.Marshal(args)
	if err != nil {
		c.problem = fmt.Sprintf("Invalid arguments for tool %s: %v", c.name, err)
		return c
	}
	c.args, c.argsJSON = args, b
	_, actionKind := kinds(c.name)
	c.action = actionObject(actionKind, b)
	return c
}

// inferEditorCommand guesses the file_editor command from the arguments present.
func inferEditorCommand(obj map[string]any) string {
	switch {
	case obj["old_str"] != nil:
		return string(tool.EditorStrReplace)
	case obj["insert_line"] != nil:
		return string(tool.EditorInsert)
	case obj["file_text"] != nil:
		return string(tool.EditorCreate)
	case obj["path"] != nil:
		return string(tool.EditorView)
	}
	return ""
}

// actionObject is args (a JSON object) with "kind" first.
func actionObject(kind string, args json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"kind":`)
	k, _ := json.Marshal(kind)
	b.Write(k)
	rest := bytes.TrimSpace(args)
	if len(rest) > 2 {
		b.WriteByte(',')
		b.Write(rest[1:])
	} else {
		b.WriteByte('}')
	}
	return b.Bytes()
}

// safeArguments returns arguments the providers accept in the history: the model's own when
// they are a JSON object, else an empty object (the error event tells the model what was
// wrong with them).
func safeArguments(s string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
		return s
	}
	return "{}"
}

// truncateAtFinish drops the calls after the first finish: the run ends there.
func truncateAtFinish(calls []llm.ToolCall) []llm.ToolCall {
	i := slices.IndexFunc(calls, func(c llm.ToolCall) bool { return c.Name == tool.Finish })
	if i < 0 {
		return calls
	}
	return calls[:i+1]
}
