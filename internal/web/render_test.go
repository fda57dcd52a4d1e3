package web

import (
	"encoding/json"
	"html/template"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/tool"
)

func TestANSISpans(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []span
	}{
		{"plain", []span{{"", "plain"}}},
		{"\x1b[31mred\x1b[0m then plain", []span{{"f1", "red"}, {"", " then plain"}}},
		{"\x1b[1;32mbold green\x1b[22m green", []span{{"f2 bo", "bold green"}, {"f2", " green"}}},
		{"\x1b[38;5;196mx\x1b[48;2;0;0;238my", []span{{"f9", "x"}, {"f9 b4", "y"}}},
		{"\x1b[7minv\x1b[27m", []span{{"f16 b17", "inv"}, {"", ""}}[:1]},
		{"\x1b]0;title\x07\x1b[2Kline\x1b(B", []span{{"", "line"}}},
		{"a\x07b\tc\r\n", []span{{"", "ab\tc\n"}}},
		{"cut \x1b[3", []span{{"", "cut "}}},
	} {
		got := ansiSpans(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("ansiSpans(%q) = %q, want %q", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ansiSpans(%q) = %q, want %q", tt.in, got, tt.want)
				break
			}
		}
	}
}

// TestLineDiff: the web app's view of a change says whether the file is the same
// besides its hunks (internal/textdiff compares), and bounds what it shows.
func TestLineDiff(t *testing.T) {
	d := lineDiff("x.txt", "a\nb\n", "a\nB\n")
	if d.Same || d.Added != 1 || d.Removed != 1 || len(d.Hunks) != 1 {
		t.Fatalf("a changed line: %+v", d)
	}
	if d := lineDiff("x", "same\n", "same\n"); !d.Same || len(d.Hunks) != 0 {
		t.Errorf("an unchanged file: %+v", d)
	}
	// A huge change is cut, and says how much was left out.
	var big strings.Builder
	for range maxDiffLines + 500 {
		big.WriteString("line\n")
	}
	huge := lineDiff("big", "", big.String())
	shown := 0
	for _, h := range huge.Hunks {
		shown += len(h.Lines)
	}
	if shown != maxDiffLines || huge.Omitted != 500 {
		t.Errorf("a huge diff shows %d lines and omits %d, want %d and 500", shown, huge.Omitted, maxDiffLines)
	}
}

func TestMarkdownIsInert(t *testing.T) {
	for _, in := range []string{
		"<script>alert(1)</script>",
		`<img src=x onerror="alert(1)">`,
		"[click](javascript:alert(1))",
		"![x](javascript:alert(1))",
		`<a href="javascript:alert(1)">x</a>`,
		"[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
		"<iframe src=//evil></iframe>",
		`<div onmouseover="alert(1)">hover</div>`,
	} {
		out := string(markdown(in))
		low := strings.ToLower(out)
		for _, bad := range []string{"<script", "<img src=\"x\"", "onerror", "javascript:", "<iframe", "onmouseover", "data:text/html"} {
			if strings.Contains(low, bad) {
				t.Errorf("markdown(%q) = %q holds %q", in, out, bad)
			}
		}
	}
	out := string(markdown("**bold** and [a link](https://example.com)"))
	if !strings.Contains(out, "<strong>bold</strong>") || !strings.Contains(out, `rel="nofollow noopener noreferrer"`) {
		t.Errorf("markdown lost its formatting or the links' rel: %q", out)
	}
}

// renderEvents renders events as the page does.
func renderEvents(t *testing.T, evs []event.Event) string {
	t.Helper()
	a, err := New(Deps{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, v := range viewEvents(evs) {
		html, err := a.fragmentHTML("event", v)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(html)
	}
	return b.String()
}

func mustEvent(t *testing.T, id, source string, body event.Body) event.Event {
	t.Helper()
	e, err := event.New(id, time.Unix(1700000000, 0), source, body)
	if err != nil {
		t.Fatal(err)
	}
	e.Seq = 1
	return e
}

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEverythingTheAgentWritesIsInert renders every kind of event with markup in every field
// the agent or a command controls, and finds no element of its making.
func TestEverythingTheAgentWritesIsInert(t *testing.T) {
	const probe = `<script>x()</script><img src=x onerror=x()>"'><svg onload=x()>`
	old, new := "a "+probe+"\n", "b "+probe+"\n"
	evs := []event.Event{
		mustEvent(t, "m1", event.SourceUser, &event.MessageEvent{LLMMessage: event.LLMMessage{Role: "user", Content: []any{event.Text(probe)}}}),
		mustEvent(t, "m2", event.SourceAgent, &event.MessageEvent{LLMMessage: event.LLMMessage{Role: "assistant", Content: []any{event.Text(probe)}}}),
		mustEvent(t, "a1", event.SourceAgent, &event.ActionEvent{ToolName: "terminal", ToolCallID: "c1", Summary: ptr(probe),
			Thought: []event.TextPart{event.Text(probe)}, SecurityRisk: probe,
			Action: rawJSON(t, map[string]any{"kind": "TerminalAction", "command": probe})}),
		mustEvent(t, "o1", event.SourceEnvironment, &event.ObservationEvent{ActionID: "a1", ToolCallID: "c1", ToolName: "terminal",
			Observation: rawJSON(t, tool.TerminalObservation{Kind: tool.KindTerminal, Content: tool.Content("\x1b[31m" + probe + "\x1b[0m"), ExitCode: 0})}),
		mustEvent(t, "a2", event.SourceAgent, &event.ActionEvent{ToolName: "file_editor", ToolCallID: "c2",
			Action: rawJSON(t, map[string]any{"kind": "FileEditorAction", "command": "str_replace", "path": "/w/" + probe})}),
		mustEvent(t, "o2", event.SourceEnvironment, &event.ObservationEvent{ActionID: "a2", ToolCallID: "c2", ToolName: "file_editor",
			Observation: rawJSON(t, tool.FileEditorObservation{Kind: tool.KindFileEditor, Command: "str_replace", Path: "/w/" + probe, PrevExist: true, OldContent: &old, NewContent: &new})}),
		mustEvent(t, "a3", event.SourceAgent, &event.ActionEvent{ToolName: "task_tracker", ToolCallID: "c3",
			Action: rawJSON(t, map[string]any{"kind": "TaskTrackerAction", "command": "plan"})}),
		mustEvent(t, "o3", event.SourceEnvironment, &event.ObservationEvent{ActionID: "a3", ToolCallID: "c3", ToolName: "task_tracker",
			Observation: rawJSON(t, tool.TaskTrackerObservation{Kind: tool.KindTaskTracker, TaskList: []tool.TaskItem{{Title: probe, Notes: probe, Status: "done"}}})}),
		mustEvent(t, "a4", event.SourceAgent, &event.ActionEvent{ToolName: probe, ToolCallID: "c4", Action: rawJSON(t, map[string]any{"kind": "X", "q": probe})}),
		mustEvent(t, "e4", event.SourceAgent, &event.AgentErrorEvent{ToolName: probe, ToolCallID: "c4", Error: probe}),
		mustEvent(t, "a5", event.SourceAgent, &event.ActionEvent{ToolName: "think", ToolCallID: "c5", Action: rawJSON(t, map[string]any{"kind": "ThinkAction", "thought": probe})}),
		mustEvent(t, "a6", event.SourceAgent, &event.ActionEvent{ToolName: "finish", ToolCallID: "c6", Action: rawJSON(t, map[string]any{"kind": "FinishAction", "message": probe})}),
		mustEvent(t, "x1", event.SourceEnvironment, &event.ConversationErrorEvent{Code: probe, Detail: probe}),
		mustEvent(t, "x2", event.SourceEnvironment, &event.SystemPromptEvent{SystemPrompt: event.Text(probe), Tools: []json.RawMessage{rawJSON(t, map[string]string{"title": probe})}}),
		mustEvent(t, "x3", event.SourceEnvironment, &event.MCPServerErrorEvent{Server: probe, Detail: probe}),
		mustEvent(t, "x4", event.SourceUser, &event.MessageEvent{LLMMessage: event.LLMMessage{Role: "user", Content: []any{
			event.ImagePart{Type: "image", ImageURLs: []string{"javascript:x()", "data:image/svg+xml;base64,PHN2Zz4=", "data:image/png;base64,iVBORw0KGgo="}}}}}),
	}
	out := renderEvents(t, evs)
	// Text is escaped, so every "<" of the output starts an element the templates made: none
	// may run script, and no attribute may be a handler or a script URL.
	for _, m := range tagRE.FindAllStringSubmatch(out, -1) {
		name, attrs := strings.ToLower(m[1]), strings.ToLower(m[2])
		switch name {
		case "script", "svg", "iframe", "object", "embed", "style", "link", "meta", "base", "form":
			t.Errorf("the rendered events hold a <%s> element: %s", name, m[0])
		}
		if handlerRE.MatchString(attrs) || strings.Contains(attrs, "javascript:") || strings.Contains(attrs, "data:image/svg") {
			t.Errorf("the rendered events hold an element with a dangerous attribute: %s", m[0])
		}
	}
	// The one image of an allowed kind is shown; the text of each field is there, escaped.
	if strings.Count(out, "<img ") != 1 || !strings.Contains(out, `src="data:image/png;base64,iVBORw0KGgo="`) {
		t.Errorf("the png data URL is not shown as the one image: %s", out)
	}
	if n := strings.Count(out, "&lt;script&gt;x()&lt;/script&gt;"); n < 10 {
		t.Errorf("the probe is shown escaped %d times, want every field's", n)
	}
	// The terminal keeps its colour, the result sits in its action's card.
	if !strings.Contains(out, `<span class="f1">&lt;script&gt;`) {
		t.Error("the terminal output lost its colour")
	}
	if strings.Count(out, `id="ev-o1"`) != 0 || !strings.Contains(out, `id="res-a1"`) {
		t.Error("the observation is not inside its action's card")
	}
	_ = template.HTML("")
}

func ptr[T any](v T) *T { return &v }

var (
	tagRE     = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)([^>]*)>`)
	handlerRE = regexp.MustCompile(`\son[a-z]+\s*=`)
)

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/conversations",
		"/settings":            "/settings",
		"/conversations?q=x":   "/conversations?q=x",
		"//evil.example":       "/conversations",
		"/\\evil.example":      "/conversations",
		"https://evil.example": "/conversations",
		"javascript:alert(1)":  "/conversations",
		"/x\r\nSet-Cookie: a":  "/conversations",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
