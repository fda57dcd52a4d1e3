package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/anthropic"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/llm/openai"
	"github.com/agentd/agentd/internal/tool"
)

// memLog is an in-memory Log, as the conversation runner keeps one in the store.
type memLog struct {
	mu  sync.Mutex
	evs []event.Event
	seq int64
	// onAppend, if set, runs after each append (outside the lock).
	onAppend func([]event.Event)
	// loads and appends count the calls.
	loads, appends int
}

func (l *memLog) Load(_ context.Context, after int64) ([]event.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads++
	var out []event.Event
	for _, e := range l.evs {
		if e.Seq > after {
			// Each read makes its own strings, as a store's does.
			e.ConversationID, e.Kind, e.Source = strings.Clone(e.ConversationID), strings.Clone(e.Kind), strings.Clone(e.Source)
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *memLog) Append(_ context.Context, evs []event.Event) (int64, error) {
	l.mu.Lock()
	l.appends++
	var prev int64
	if n := len(l.evs); n > 0 {
		prev = l.evs[n-1].Seq
	}
	for i := range evs {
		l.seq++
		evs[i].Seq = l.seq
		evs[i].ConversationID = "conv"
		l.evs = append(l.evs, evs[i])
	}
	hook := l.onAppend
	l.mu.Unlock()
	if hook != nil {
		hook(evs)
	}
	return prev, nil
}

// userSays appends a user message, as the conversation service does.
func (l *memLog) userSays(t *testing.T, text string, images ...string) {
	t.Helper()
	ev, err := event.NewUserMessage(fmt.Sprintf("user-%d", time.Now().UnixNano()), time.Now(), text, images)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(context.Background(), []event.Event{ev})
}

func (l *memLog) all() []event.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event.Event(nil), l.evs...)
}

// kinds lists the log's kinds, state updates spelled key=value, so a test can read the story.
func (l *memLog) kinds() []string {
	var out []string
	for _, e := range l.all() {
		k := e.Kind
		body, _ := event.Decode(e)
		switch b := body.(type) {
		case *event.StateUpdateEvent:
			if b.Key == event.StateStats {
				continue
			}
			k = b.Key + "=" + strings.Trim(string(b.Value), `"`)
		case *event.ActionEvent:
			k += ":" + b.ToolName
		case *event.ObservationEvent:
			k += ":" + b.ToolName
		case *event.MessageEvent:
			k += ":" + b.Source
		case *event.ConversationErrorEvent:
			k += ":" + b.Code
		}
		out = append(out, k)
	}
	return out
}

func (l *memLog) bodies(kind string) []event.Body {
	var out []event.Body
	for _, e := range l.all() {
		if e.Kind == kind {
			b, _ := event.Decode(e)
			out = append(out, b)
		}
	}
	return out
}

// fakeTools is an Executor with an in-memory file system and a scripted terminal.
type fakeTools struct {
	mu       sync.Mutex
	files    map[string]string
	terminal func(cmd string) (string, int)
	calls    []string
	block    chan struct{} // if set, every call waits for it
	// running is the terminal command a blocked call left running when its caller gave up.
	running string
}

// Interrupt stops the command a blocked terminal call left running, as the runtime's C-c.
func (f *fakeTools) Interrupt(context.Context) (tool.Result, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running == "" {
		return tool.Result{}, false, nil
	}
	cmd := f.running
	f.running = ""
	return tool.NewResult("^C\n[Command finished with exit code 130]", false,
		tool.TerminalObservation{Kind: tool.KindTerminal, Command: cmd, ExitCode: 130, Content: tool.Content("^C")}), true, nil
}

func newFakeTools() *fakeTools {
	return &fakeTools{files: map[string]string{}, terminal: func(cmd string) (string, int) { return "ran " + cmd, 0 }}
}

func (f *fakeTools) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			var a tool.TerminalArgs
			if name == tool.Terminal && tool.DecodeArgs(name, args, &a) == nil {
				f.mu.Lock()
				f.running = a.Command
				f.mu.Unlock()
			}
			return tool.Result{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+string(args))
	switch name {
	case tool.Terminal:
		var a tool.TerminalArgs
		if err := tool.DecodeArgs(name, args, &a); err != nil {
			return tool.ErrorResult(name, err.Error()), nil
		}
		out, code := f.terminal(a.Command)
		text := fmt.Sprintf("%s\n[Command finished with exit code %d]", out, code)
		return tool.NewResult(text, false, tool.TerminalObservation{Kind: tool.KindTerminal, Command: a.Command, ExitCode: code, Content: tool.Content(out)}), nil
	case tool.FileEditor:
		var a tool.FileEditorArgs
		if err := tool.DecodeArgs(name, args, &a); err != nil {
			return tool.ErrorResult(name, err.Error()), nil
		}
		obs := tool.FileEditorObservation{Kind: tool.KindFileEditor, Command: string(a.Command), Path: a.Path}
		var text string
		switch a.Command {
		case tool.EditorCreate:
			if _, ok := f.files[a.Path]; ok {
				return tool.ErrorResult(name, "File already exists at: "+a.Path), nil
			}
			f.files[a.Path] = *a.FileText
			text = "File created successfully at: " + a.Path
		case tool.EditorView:
			c, ok := f.files[a.Path]
			if !ok {
				return tool.ErrorResult(name, "The path "+a.Path+" does not exist."), nil
			}
			text = c
		case tool.EditorStrReplace:
			c := f.files[a.Path]
			if strings.Count(c, *a.OldStr) != 1 {
				return tool.ErrorResult(name, "No replacement was performed."), nil
			}
			f.files[a.Path] = strings.Replace(c, *a.OldStr, *a.NewStr, 1)
			text = "The file " + a.Path + " has been edited."
		default:
			return tool.ErrorResult(name, "unsupported in the fake"), nil
		}
		obs.Content = tool.Content(text)
		return tool.NewResult(text, false, obs), nil
	}
	return tool.Result{}, fmt.Errorf("fake tools: no tool %s", name)
}

// providers are the protocols every loop test runs over, each through its official SDK.
var providers = []struct {
	name  string
	model string
	srv   func(t testing.TB, steps ...llmtest.Step) *llmtest.Server
	new   func(llm.Config) (llm.Client, error)
}{
	{"openai", "gpt-4o", llmtest.NewOpenAI, openai.New},
	{"anthropic", "claude-sonnet-4-5", llmtest.NewAnthropic, anthropic.New},
}

// rig is one agent under test.
type rig struct {
	t     *testing.T
	srv   *llmtest.Server
	log   *memLog
	tools *fakeTools
	cfg   Config
	llm   llm.Client
	pause func() bool
}

func newRig(t *testing.T, provider int, steps ...llmtest.Step) *rig {
	t.Helper()
	p := providers[provider]
	srv := p.srv(t, steps...)
	c, err := p.new(srv.Config(p.model))
	if err != nil {
		t.Fatal(err)
	}
	retrying := llm.WithRetry(c, llm.RetryPolicy{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }})
	return &rig{t: t, srv: srv, log: &memLog{}, tools: newFakeTools(), llm: retrying,
		cfg: Config{Model: p.model, Workspace: "/workspace/project"}}
}

func (r *rig) run() Status {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := New(Options{Config: r.cfg, LLM: r.llm, Tools: r.tools, Log: r.log, PauseRequested: r.pause})
	st, err := a.Run(ctx)
	if err != nil {
		r.t.Fatalf("run: %v", err)
	}
	return st
}

func (r *rig) wantKinds(want ...string) {
	r.t.Helper()
	got := r.log.kinds()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		r.t.Fatalf("log:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// forEachProvider runs a loop test over both protocols.
func forEachProvider(t *testing.T, fn func(t *testing.T, p int)) {
	for i, p := range providers {
		t.Run(p.name, func(t *testing.T) { fn(t, i) })
	}
}

func toolNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// toolTexts returns the text of the tool messages of a request, in order.
func toolTexts(req llmtest.RecordedRequest) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Text())
		}
	}
	return out
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// waitFor polls cond until it holds or 30 seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
