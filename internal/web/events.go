package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/tool"
)

// A conversation's events as people read them. Each event of the log becomes an eventView,
// which the "event" template renders; an action's result (its observation, rejection or
// error) is shown inside the action's card, in the slot with the id resultSlot(action).
// Everything comes out of html/template, so what the agent wrote is text wherever it lands;
// the one exception is Markdown, which goldmark renders without raw HTML (markdown.go).

// foldLines and foldBytes decide when an output is folded away behind its summary.
const (
	foldLines = 25
	foldBytes = 4000
	// maxOutputBytes bounds the output shown of one result; the rest is cut in the middle.
	maxOutputBytes = 256 << 10
)

// eventView is one event as the page shows it. Exactly one of the pointer fields is set,
// unless Hidden.
type eventView struct {
	ID     string
	Kind   string
	Source string
	Time   time.Time
	// Hidden events change the status line rather than the list (state updates).
	Hidden bool

	Message *messageView
	Action  *actionView
	Result  *resultView // an observation whose action is not shown (or streamed on its own)
	Problem *problemView
	Note    string
	System  *systemView
}

type messageView struct {
	Role   string // user, agent, environment
	HTML   template.HTML
	Images []template.URL
	Links  []string // image URLs that are not data URLs, shown as links
}

type actionView struct {
	ID      string
	Tool    string
	Summary string
	Thought template.HTML
	Risk    string // MEDIUM or HIGH; lower risks go unmarked
	Invalid bool
	// What the action does, by its kind.
	Command string // terminal
	Input   bool   // terminal: typed into the running program
	EditCmd string // file_editor
	Plan    bool   // task_tracker
	Path    string
	Think   template.HTML
	Finish  template.HTML
	Args    string // other tools: the arguments, indented JSON
	Slot    string // the id of the result slot
	CallID  string
	Result  *resultView
}

type resultView struct {
	ActionID string
	// CallID names the tool call when the action is not known by its id (an error event).
	CallID string
	Slot   string
	Error  bool
	// Terminal output, with its exit code (-1: still running or unknown).
	Terminal *terminalView
	Diff     *diffView
	Tasks    []tool.TaskItem
	Text     string
	Folded   bool
	Lines    int
	Rejected string
	Files    []string
}

type terminalView struct {
	Spans    []span
	ExitCode int
	Timeout  bool
	Folded   bool
	Lines    int
	Dir      string
}

type problemView struct {
	Title  string
	Detail string
}

type systemView struct {
	Prompt string
	Tools  []string
}

// resultSlot is the id of the element an action's result goes into.
func resultSlot(actionID string) string { return "res-" + actionID }

// dataImage is a data URL of an image kind browsers show without running anything.
var dataImage = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$`)

// viewEvents turns a log into views, putting each result in its action's card.
func viewEvents(evs []event.Event) []eventView {
	out := make([]eventView, 0, len(evs))
	actions := map[string]*actionView{}
	calls := map[string]*actionView{} // the latest action of each call id
	for _, e := range evs {
		v := viewEvent(e)
		if v.Action != nil {
			actions[v.Action.ID] = v.Action
			if v.Action.CallID != "" {
				calls[v.Action.CallID] = v.Action
			}
		}
		if r := v.Result; r != nil {
			a, ok := actions[r.ActionID]
			if !ok && r.ActionID == "" {
				a, ok = calls[r.CallID]
			}
			if ok && a.Result == nil {
				a.Result = r
				continue
			}
		}
		if v.Hidden {
			continue
		}
		out = append(out, v)
	}
	return out
}

// viewEvent is one event on its own (as the stream sends it).
func viewEvent(e event.Event) eventView {
	v := eventView{ID: e.ID, Kind: e.Kind, Source: e.Source, Time: e.Timestamp}
	b, err := event.Decode(e)
	if err != nil {
		v.Problem = &problemView{Title: "An event that could not be read", Detail: e.Kind}
		return v
	}
	switch b := b.(type) {
	case *event.MessageEvent:
		v.Message = viewMessage(e.Source, b)
	case *event.ActionEvent:
		v.Action = viewAction(b)
	case *event.ObservationEvent:
		v.Result = viewObservation(b)
	case *event.UserRejectObservation:
		v.Result = &resultView{ActionID: b.ActionID, Slot: resultSlot(b.ActionID), Rejected: orDefault(b.RejectionReason, "no reason given")}
	case *event.AgentErrorEvent:
		// An error in place of a tool's result, shown in the card of the action that made
		// the call (found by its call id), else on its own.
		if b.ToolCallID != "" {
			v.Result = &resultView{CallID: b.ToolCallID, Error: true, Text: b.Error, Lines: strings.Count(b.Error, "\n") + 1}
		} else {
			v.Problem = &problemView{Title: "Tool error" + orSuffix(b.ToolName), Detail: b.Error}
		}
	case *event.ConversationErrorEvent:
		v.Problem = &problemView{Title: orDefault(b.Code, "Error"), Detail: b.Detail}
	case *event.StateUpdateEvent:
		v.Hidden = true
	case *event.PauseEvent:
		v.Note = "Paused"
	case *event.Condensation:
		v.Note = fmt.Sprintf("%d earlier events condensed for the model", len(b.ForgottenEventIDs))
	case *event.SandboxPausedEvent:
		v.Note = "Sandbox paused: " + b.Reason
	case *event.SkillWarningEvent:
		v.Problem = &problemView{Title: "Skill file skipped: " + b.Path, Detail: b.Detail}
	case *event.MCPServerErrorEvent:
		v.Problem = &problemView{Title: "MCP server " + b.Server + " is not available", Detail: b.Detail}
	case *event.SystemPromptEvent:
		s := &systemView{Prompt: b.SystemPrompt.Text}
		for _, raw := range b.Tools {
			var t struct {
				Title string `json:"title"`
				Name  string `json:"name"`
			}
			_ = json.Unmarshal(raw, &t)
			s.Tools = append(s.Tools, orDefault(t.Title, t.Name))
		}
		v.System = s
	case *event.ServerErrorEvent:
		v.Problem = &problemView{Title: orDefault(b.Code, "Server error"), Detail: b.Detail}
	default:
		// A kind this page does not know (a status change, a newer server's event) moves
		// the status line, not the list.
		v.Hidden = true
	}
	return v
}

func viewMessage(source string, m *event.MessageEvent) *messageView {
	mv := &messageView{Role: source, HTML: markdown(strings.Join(m.Texts(), "\n\n"))}
	for _, u := range m.ImageURLs() {
		if dataImage.MatchString(u) {
			mv.Images = append(mv.Images, template.URL(u)) // an image kind, base64 only: inert
		} else {
			mv.Links = append(mv.Links, u)
		}
	}
	return mv
}

func viewAction(a *event.ActionEvent) *actionView {
	av := &actionView{ID: a.ID, Tool: a.ToolName, Slot: resultSlot(a.ID), CallID: a.ToolCallID}
	switch a.SecurityRisk {
	case "MEDIUM", "HIGH":
		av.Risk = a.SecurityRisk
	}
	if a.Summary != nil {
		av.Summary = *a.Summary
	}
	var thought []string
	for _, t := range a.Thought {
		thought = append(thought, t.Text)
	}
	if s := strings.TrimSpace(strings.Join(thought, "\n")); s != "" {
		av.Thought = markdown(s)
	}
	if len(a.Action) == 0 || string(a.Action) == "null" {
		av.Invalid = true
		av.Args = a.ToolCall.Arguments
		return av
	}
	var args struct {
		Kind    string `json:"kind"`
		Command string `json:"command"`
		IsInput bool   `json:"is_input"`
		Path    string `json:"path"`
		Thought string `json:"thought"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(a.Action, &args)
	switch args.Kind {
	case "TerminalAction":
		av.Command, av.Input = args.Command, args.IsInput
	case "FileEditorAction":
		av.EditCmd, av.Path = args.Command, args.Path
	case "TaskTrackerAction":
		av.Plan = true
	case "ThinkAction":
		av.Think = markdown(args.Thought)
	case "FinishAction":
		av.Finish = markdown(args.Message)
	default:
		av.Args = indentJSON(a.Action)
	}
	return av
}

func viewObservation(o *event.ObservationEvent) *resultView {
	rv := &resultView{ActionID: o.ActionID, Slot: resultSlot(o.ActionID)}
	var obs struct {
		Kind       string             `json:"kind"`
		Command    string             `json:"command"`
		ExitCode   *int               `json:"exit_code"`
		Timeout    bool               `json:"timeout"`
		Path       string             `json:"path"`
		PrevExist  bool               `json:"prev_exist"`
		OldContent *string            `json:"old_content"`
		NewContent *string            `json:"new_content"`
		TaskList   []tool.TaskItem    `json:"task_list"`
		Files      []string           `json:"files"`
		Matches    []string           `json:"matches"`
		Content    []tool.TextContent `json:"content"`
		IsError    bool               `json:"is_error"`
		Metadata   struct {
			WorkingDir string `json:"working_dir"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(o.Observation, &obs)
	var texts []string
	for _, c := range obs.Content {
		if c.Type == "" || c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	text := clip(strings.Join(texts, "\n"))
	rv.Error = obs.IsError
	switch {
	case obs.Kind == tool.KindTerminal:
		exit := -1
		if obs.ExitCode != nil {
			exit = *obs.ExitCode
		}
		lines := strings.Count(text, "\n") + 1
		rv.Terminal = &terminalView{Spans: ansiSpans(text), ExitCode: exit, Timeout: obs.Timeout,
			Lines: lines, Folded: lines > foldLines || len(text) > foldBytes, Dir: obs.Metadata.WorkingDir}
	case obs.Kind == tool.KindFileEditor && !obs.IsError && obs.NewContent != nil && obs.Command != "view":
		before := ""
		if obs.OldContent != nil {
			before = *obs.OldContent
		}
		d := lineDiff(obs.Path, before, *obs.NewContent)
		d.Created = !obs.PrevExist
		rv.Diff = &d
	case obs.Kind == tool.KindTaskTracker && !obs.IsError:
		rv.Tasks = obs.TaskList
		if len(rv.Tasks) == 0 {
			rv.Text = text
		}
	default:
		rv.Text = text
		rv.Lines = strings.Count(text, "\n") + 1
		rv.Folded = rv.Lines > foldLines || len(text) > foldBytes
	}
	return rv
}

// clip cuts an output longer than maxOutputBytes in the middle.
func clip(s string) string {
	if len(s) <= maxOutputBytes {
		return s
	}
	half := maxOutputBytes / 2
	head, tail := strings.ToValidUTF8(s[:half], ""), strings.ToValidUTF8(s[len(s)-half:], "")
	return head + fmt.Sprintf("\n[... %d bytes not shown ...]\n", len(s)-2*half) + tail
}

func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func orSuffix(name string) string {
	if name == "" {
		return ""
	}
	return ": " + name
}
