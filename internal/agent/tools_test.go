package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/tool"
)

// issueArgs are the arguments of a tool a conversation has beside the built-in ones.
type issueArgs struct {
	Number int `json:"number" wire:"required,min=1" doc:"The issue's number."`
}

func (issueArgs) WireStrict() {}

// withIssues runs read_issue itself and leaves every other tool to the fake sandbox.
type withIssues struct{ *fakeTools }

func (w withIssues) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	if name != "read_issue" {
		return w.fakeTools.Run(ctx, name, args)
	}
	var a struct{ Number int }
	json.Unmarshal(args, &a)
	text := "Issue 3: it crashes."
	if a.Number != 3 {
		text = "no such issue"
	}
	return tool.NewResult(text, a.Number != 3, map[string]any{"kind": "GitProviderObservation", "content": tool.Content(text), "is_error": a.Number != 3}), nil
}

// TestConfigTools: the tools of Config.Tools are offered beside the built-in ones, checked
// against their own schema, run by the executor, and named in the log as OpenHands names a
// tool's classes.
func TestConfigTools(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("read_issue", `{"number": 3}`)),
			llmtest.Calls(llmtest.Call("read_issue", `{"number": "three"}`)),
			llmtest.Text("It crashes."),
		)
		r.log.userSays(t, "What does issue 3 say?")
		r.cfg.Tools = []tool.Tool{tool.New("read_issue", "Read an issue.", tool.ControlPlane, true, "GitProviderObservation", issueArgs{})}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a := New(Options{Config: r.cfg, LLM: r.llm, Tools: withIssues{r.tools}, Log: r.log})
		if st, err := a.Run(ctx); err != nil || st != StatusFinished {
			t.Fatalf("run: %v %v", st, err)
		}
		reqs := r.srv.Requests()
		names := toolNames(reqs[0].Tools)
		if !slices.Contains(names, "read_issue") || !slices.Contains(names, tool.Terminal) {
			t.Fatalf("offered %v", names)
		}
		texts := toolTexts(reqs[2])
		if len(texts) != 2 || texts[0] != "Issue 3: it crashes." || !strings.Contains(texts[1], "number") {
			t.Fatalf("the model read %q", texts)
		}
		r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running", "ActionEvent:read_issue", "ObservationEvent:read_issue",
			"ActionEvent:read_issue", "AgentErrorEvent", "MessageEvent:agent", "execution_status=finished")
		act := r.log.bodies(event.KindAction)[0].(*event.ActionEvent)
		if !strings.HasPrefix(string(act.Action), `{"kind":"ReadIssueAction","number":3`) {
			t.Errorf("action %s", act.Action)
		}
		sp := r.log.bodies(event.KindSystemPrompt)[0].(*event.SystemPromptEvent)
		var found bool
		for _, d := range sp.Tools {
			found = found || strings.Contains(string(d), `"kind":"ReadIssueTool"`)
		}
		if !found {
			t.Errorf("the system prompt's tools lack ReadIssueTool")
		}
	})
}

// TestUpdateTools: tools that change during a run (an MCP server's) are offered from the
// next model call on, and a call to a tool that is gone is an error the model reads.
func TestUpdateTools(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p,
			llmtest.Calls(llmtest.Call("read_issue", `{"number": 3}`)),
			llmtest.Calls(llmtest.Call("read_issue", `{"number": 3}`)),
			llmtest.Text("Done."),
		)
		r.log.userSays(t, "What does issue 3 say?")
		readIssue := tool.New("read_issue", "Read an issue.", tool.ControlPlane, true, "GitProviderObservation", issueArgs{})
		listIssues := tool.NewRaw("list_issues", "List the issues.", tool.Sandbox, true, "MCPToolObservation", json.RawMessage(`{"type":"object","properties":{}}`))
		// The first model call offers read_issue; the tools change after it: read_issue goes
		// and list_issues comes.
		calls := 0
		update := func(context.Context) ([]tool.Tool, bool) {
			calls++
			switch calls {
			case 1:
				return nil, false
			case 2:
				return []tool.Tool{listIssues}, true
			}
			return nil, false
		}
		r.cfg.Tools = []tool.Tool{readIssue}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a := New(Options{Config: r.cfg, LLM: r.llm, Tools: withIssues{r.tools}, Log: r.log, UpdateTools: update})
		if st, err := a.Run(ctx); err != nil || st != StatusFinished {
			t.Fatalf("run: %v %v", st, err)
		}
		reqs := r.srv.Requests()
		if len(reqs) != 3 || calls != 3 {
			t.Fatalf("%d model calls, %d looks for changed tools", len(reqs), calls)
		}
		if names := toolNames(reqs[0].Tools); !slices.Contains(names, "read_issue") || slices.Contains(names, "list_issues") {
			t.Errorf("first call offered %v", names)
		}
		if names := toolNames(reqs[1].Tools); slices.Contains(names, "read_issue") || !slices.Contains(names, "list_issues") || !slices.Contains(names, tool.Terminal) {
			t.Errorf("second call offered %v", names)
		}
		// The second read_issue was made after the tool went away.
		r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running", "ActionEvent:read_issue", "ObservationEvent:read_issue",
			"ActionEvent:read_issue", "AgentErrorEvent", "MessageEvent:agent", "execution_status=finished")
		if texts := toolTexts(reqs[2]); len(texts) != 2 || !strings.Contains(texts[1], "list_issues") {
			t.Errorf("the model read %q", texts)
		}
	})
}

// withSnapshot answers the tool snapshot with text and an image, as an MCP tool does.
type withSnapshot struct{ *fakeTools }

const snapshotURL = "data:image/png;base64,iVBORw0KGgo="

func (w withSnapshot) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	if name != "snapshot" {
		return w.fakeTools.Run(ctx, name, args)
	}
	obs := map[string]any{"kind": "MCPToolObservation", "tool_name": name, "is_error": false, "content": []any{
		map[string]any{"type": "text", "text": "the screen"},
		map[string]any{"type": "image", "image_urls": []string{snapshotURL}},
	}}
	return tool.NewResult("[Tool 'snapshot' executed.]\nthe screen\n[image: image/png, 8 bytes]", false, obs), nil
}

// TestToolImages: the images of a tool's observation reach a model that takes images, after
// the tool's text, in each provider's way; a model that takes none reads the text only.
func TestToolImages(t *testing.T) {
	for _, tc := range []struct {
		provider int
		model    string
		vision   bool
	}{{0, "gpt-4o", true}, {1, "claude-sonnet-4-5", true}, {0, "llama3.1:8b", false}} {
		t.Run(providers[tc.provider].name+"/"+tc.model, func(t *testing.T) {
			r := newRig(t, tc.provider, llmtest.Calls(llmtest.Call("snapshot", `{}`)), llmtest.Text("I see it."))
			r.cfg.Model = tc.model
			r.cfg.Tools = []tool.Tool{tool.NewRaw("snapshot", "Take a snapshot.", tool.Sandbox, true, "MCPToolObservation", json.RawMessage(`{"type":"object"}`))}
			r.log.userSays(t, "What is on the screen?")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if st, err := New(Options{Config: r.cfg, LLM: r.llm, Tools: withSnapshot{r.tools}, Log: r.log}).Run(ctx); err != nil || st != StatusFinished {
				t.Fatalf("run: %v %v", st, err)
			}
			reqs := r.srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			var images []string
			sawText := false
			for _, m := range reqs[1].Messages {
				for _, p := range m.Parts {
					if p.Type == llm.PartImage {
						images = append(images, p.ImageURL)
						if tc.provider == 1 && m.Role != llm.RoleTool {
							t.Errorf("the image came in a %s message, not the tool result", m.Role)
						}
					}
					sawText = sawText || strings.Contains(p.Text, "the screen")
				}
			}
			if !sawText {
				t.Error("the model did not read the tool's text")
			}
			if tc.vision && (len(images) != 1 || images[0] != snapshotURL) {
				t.Errorf("images sent %q, want the snapshot", images)
			}
			if !tc.vision && len(images) > 0 {
				t.Errorf("images sent to a model that takes none: %q", images)
			}
		})
	}
}

// TestBuiltinSpecsAreShared: every conversation offers the built-in tools with the same specs
// in memory, and a conversation's own tools, after them, never reach another's.
func TestBuiltinSpecsAreShared(t *testing.T) {
	own := toolset{extra: []tool.Tool{tool.New("read_issue", "Read an issue.", tool.ControlPlane, true, "GitProviderObservation", issueArgs{})}}
	a, b, c := toolset{}.specs(), own.specs(), toolset{}.specs()
	if len(a) == 0 || len(b) != len(a)+1 || b[len(a)].Name != "read_issue" {
		t.Fatalf("specs: %d built-in, %d with one tool of the conversation's", len(a), len(b))
	}
	for i := range a {
		if unsafe.SliceData(a[i].Parameters) != unsafe.SliceData(b[i].Parameters) || unsafe.SliceData(a[i].Parameters) != unsafe.SliceData(c[i].Parameters) {
			t.Fatalf("the spec of %s is held once per conversation", a[i].Name)
		}
	}
	other := toolset{extra: []tool.Tool{tool.New("list_issues", "List issues.", tool.ControlPlane, true, "GitProviderObservation", issueArgs{})}}
	if d := other.specs(); len(c) != len(a) || d[len(a)].Name != "list_issues" || b[len(a)].Name != "read_issue" {
		t.Fatal("a conversation's own tool reached the specs of another")
	}
}
