package cli

import (
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/internal/textdiff"
	"io"
	"strings"
)

// The human rendering of a conversation's events: what the agent said and did, readably.
// It reads the events' public JSON shapes (those of OpenHands agent servers) and nothing
// else; kinds it does not know are named and skipped.

// wireEvent is what the renderer reads of an event.
type wireEvent struct {
	Kind     string          `json:"kind"`
	ID       string          `json:"id"`
	Source   string          `json:"source"`
	ToolName string          `json:"tool_name"`
	Action   json.RawMessage `json:"action"`
	// Observation is an ObservationEvent's result.
	Observation json.RawMessage `json:"observation"`
	Thought     []textPart      `json:"thought"`
	LLMMessage  struct {
		Content []textPart `json:"content"`
	} `json:"llm_message"`
	Error  string          `json:"error"`
	Code   string          `json:"code"`
	Detail string          `json:"detail"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
	Server string          `json:"server"`
	// ForgottenEventIDs belong to a Condensation.
	ForgottenEventIDs []string `json:"forgotten_event_ids"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func texts(ps []textPart) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// action is what the renderer reads of an action object.
type action struct {
	Command any    `json:"command"` // a string (terminal, file_editor), or a task list's
	Path    string `json:"path"`
	Message string `json:"message"`
	Thought string `json:"thought"`
	Pattern string `json:"pattern"`
}

// observation is what the renderer reads of an observation object.
type observation struct {
	Content    []textPart `json:"content"`
	ExitCode   *int       `json:"exit_code"`
	Timeout    bool       `json:"timeout"`
	IsError    bool       `json:"is_error"`
	Command    string     `json:"command"`
	Path       string     `json:"path"`
	OldContent *string    `json:"old_content"`
	NewContent *string    `json:"new_content"`
}

// maxOutputLines bounds a command's output as shown: its head and tail.
const maxOutputLines = 40

// renderer writes events for a person.
type renderer struct {
	w  io.Writer
	st style
}

func (r *renderer) line(format string, args ...any) {
	fmt.Fprintf(r.w, format+"\n", args...)
}

// indent writes text below an event, each line indented.
func (r *renderer) indent(text string, color func(string) string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	for _, l := range clip(strings.Split(text, "\n"), maxOutputLines) {
		r.line("  %s", color(l))
	}
}

// clip keeps the first and last lines of a long text and says how many it left out.
func clip(lines []string, max int) []string {
	if len(lines) <= max {
		return lines
	}
	head, tail := max/2, max-max/2
	out := append([]string{}, lines[:head]...)
	out = append(out, fmt.Sprintf("… %d more lines …", len(lines)-max))
	return append(out, lines[len(lines)-tail:]...)
}

func plain(s string) string { return s }

// render writes one event.
func (r *renderer) render(raw json.RawMessage) {
	var e wireEvent
	if json.Unmarshal(raw, &e) != nil {
		return
	}
	st := r.st
	switch e.Kind {
	case "MessageEvent":
		text := texts(e.LLMMessage.Content)
		switch e.Source {
		case "user":
			r.line("%s %s", st.bold(st.blue("you:")), firstLine(text))
			r.indent(rest(text), plain)
		case "agent":
			r.line("%s %s", st.bold(st.green("agent:")), firstLine(text))
			r.indent(rest(text), plain)
		default:
			r.line("%s", st.dim("note: "+oneLine(text)))
		}
	case "ActionEvent":
		if th := strings.TrimSpace(texts(e.Thought)); th != "" {
			r.indent(th, st.dim)
		}
		r.action(e)
	case "ObservationEvent":
		r.observation(e)
	case "AgentErrorEvent":
		r.line("  %s %s", st.red("error:"), e.Error)
	case "ConversationErrorEvent":
		r.line("%s %s: %s", st.red(st.bold("✗")), st.red(e.Code), e.Detail)
	case "ConversationStateUpdateEvent":
		if e.Key == "execution_status" {
			var s string
			_ = json.Unmarshal(e.Value, &s)
			r.line("%s", st.dim("— agent "+st.status(s)+" —"))
		}
	case "PauseEvent":
		r.line("%s", st.yellow("⏸ paused"))
	case "SandboxPausedEvent":
		r.line("%s", st.yellow("⏸ sandbox paused: "+e.Reason))
	case "Condensation":
		r.line("%s", st.dim(fmt.Sprintf("(the agent condensed %d earlier events into a summary)", len(e.ForgottenEventIDs))))
	case "MCPServerErrorEvent":
		r.line("%s %s: %s", st.yellow("MCP server"), e.Server, e.Detail)
	case "SkillWarningEvent":
		r.line("%s %s", st.yellow("skill:"), e.Detail)
	case "SystemPromptEvent", "UserRejectObservation", "":
		// The system prompt is long and the same for every conversation; a rejection shows
		// as the next status.
	default:
		r.line("%s", st.dim("("+e.Kind+")"))
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func rest(s string) string {
	_, after, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return after
}

func (r *renderer) action(e wireEvent) {
	st := r.st
	var a action
	if len(e.Action) == 0 || string(e.Action) == "null" || json.Unmarshal(e.Action, &a) != nil {
		r.line("%s %s", st.yellow("→"), e.ToolName+" (invalid call)")
		return
	}
	cmd, _ := a.Command.(string)
	switch e.ToolName {
	case "terminal":
		if cmd == "" {
			r.line("%s %s", st.cyan("$"), st.dim("(waits for more output)"))
			return
		}
		r.line("%s %s", st.cyan("$"), st.bold(firstLine(cmd)))
		r.indent(rest(cmd), st.bold)
	case "file_editor":
		r.line("%s %s %s", st.cyan("✎"), cmd, a.Path)
	case "finish":
		r.line("%s %s", st.green(st.bold("✓ finished:")), firstLine(a.Message))
		r.indent(rest(a.Message), plain)
	case "think":
		r.line("%s %s", st.dim("thinking:"), st.dim(oneLine(a.Thought)))
	case "glob", "grep":
		r.line("%s %s %s", st.cyan("→"), e.ToolName, a.Pattern)
	default:
		r.line("%s %s", st.cyan("→"), e.ToolName)
	}
}

func (r *renderer) observation(e wireEvent) {
	st := r.st
	var o observation
	if json.Unmarshal(e.Observation, &o) != nil {
		return
	}
	text := texts(o.Content)
	color := plain
	if o.IsError {
		color = st.red
	}
	switch e.ToolName {
	case "terminal":
		r.indent(text, color)
		switch {
		case o.Timeout:
			r.line("  %s", st.yellow("(still running)"))
		case o.ExitCode != nil && *o.ExitCode > 0:
			r.line("  %s", st.red(fmt.Sprintf("exit %d", *o.ExitCode)))
		}
	case "file_editor":
		if o.IsError || o.NewContent == nil || o.Command == "view" {
			if o.IsError || o.Command != "view" {
				r.indent(text, color)
			}
			return
		}
		r.diff(o.Path, deref(o.OldContent), *o.NewContent)
	case "finish", "think":
	default:
		r.indent(text, color)
	}
}

// diff writes a file's change as a unified diff.
func (r *renderer) diff(path, old, new string) {
	st := r.st
	from := "a" + path
	if old == "" {
		from = "/dev/null"
	}
	unified := textdiff.Compare(old, new, maxDiffLines).Unified(from, "b"+path)
	for _, l := range clip(unified, 2*maxOutputLines) {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			l = st.bold(l)
		case strings.HasPrefix(l, "+"):
			l = st.green(l)
		case strings.HasPrefix(l, "-"):
			l = st.red(l)
		case strings.HasPrefix(l, "@@"):
			l = st.cyan(l)
		}
		r.line("  %s", l)
	}
}

// maxDiffLines bounds the lines of a change diff compares into hunks; clip then bounds what
// is written.
const maxDiffLines = 2000
