package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// trajectory is a V0 trajectory as OpenHands exports it (abridged to the fields that matter).
const trajectory = `[
  {"id": 0, "timestamp": "2025-01-01T10:00:00", "source": "user", "message": "Create hello.txt", "action": "message",
   "args": {"content": "Create hello.txt and show it", "image_urls": ["https://example.com/x.png"], "wait_for_response": false}},
  {"id": 1, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "running"}},
  {"id": 2, "source": "agent", "message": "Running command", "action": "run",
   "args": {"command": "mkdir -p notes", "is_input": false, "thought": "First a directory.", "blocking": false}},
  {"id": 3, "source": "agent", "observation": "run", "content": "", "extras": {"command": "mkdir -p notes", "metadata": {"exit_code": 0}}},
  {"id": 4, "source": "agent", "action": "edit",
   "args": {"path": "/workspace/hello.txt", "command": "create", "file_text": "hello\n", "old_str": null, "new_str": null, "insert_line": null, "thought": ""}},
  {"id": 5, "source": "agent", "observation": "edit", "content": "File created", "extras": {}},
  {"id": 6, "source": "agent", "action": "browse", "args": {"url": "https://example.com"}},
  {"id": 7, "source": "agent", "action": "read", "args": {"path": "hello.txt"}},
  {"id": 8, "source": "agent", "action": "edit",
   "args": {"path": "/workspace/hello.txt", "command": "str_replace", "old_str": "hello", "new_str": "hello world"}},
  {"id": 9, "source": "agent", "action": "message", "args": {"content": "I created hello.txt.", "wait_for_response": true}}
]`

func TestParseReplay(t *testing.T) {
	r, err := ParseReplay(trajectory)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "Create hello.txt and show it" || len(r.ImageURLs) != 1 {
		t.Fatalf("first message %+v", r)
	}
	var got []string
	for _, a := range r.Actions {
		got = append(got, a.Tool+a.Message)
	}
	if strings.Join(got, ",") != "terminal,file_editor,file_editor,file_editor,I created hello.txt." {
		t.Fatalf("actions %q", got)
	}
	if r.Actions[0].Thought != "First a directory." || string(r.Actions[1].Args) != `{"command":"create","file_text":"hello\n","path":"/workspace/hello.txt"}` {
		t.Fatalf("actions %+v", r.Actions[:2])
	}
	for _, bad := range []string{
		`{"not": "a list"}`,
		`[]`,
		`[1, 2]`,
		`[{"source": "agent", "action": "run", "args": {"command": "ls"}}]`,
	} {
		if _, err := ParseReplay(bad); !errors.Is(err, ErrBadReplay) {
			t.Errorf("%s: err %v, want ErrBadReplay", bad, err)
		}
	}
}

func TestReplayRunsWithoutTheModel(t *testing.T) {
	replay, err := ParseReplay(trajectory)
	if err != nil {
		t.Fatal(err)
	}
	log := &memLog{}
	log.userSays(t, replay.Text, replay.ImageURLs...)
	tools := newFakeTools()
	cfg := Config{Workspace: "/srv/ws", Replay: replay.Actions}
	run := func() Status {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := New(Options{Config: cfg, Tools: tools, Log: log}).Run(ctx) // no LLM at all
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	if tools.files["/srv/ws/hello.txt"] != "hello world\n" {
		t.Fatalf("files %v", tools.files)
	}
	if len(tools.calls) != 4 || !strings.Contains(tools.calls[0], "mkdir -p notes") {
		t.Fatalf("tool calls %q", tools.calls)
	}
	r := &rig{t: t, log: log}
	r.wantKinds("MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "ObservationEvent:terminal", "ActionEvent:file_editor", "ObservationEvent:file_editor",
		"ActionEvent:file_editor", "ObservationEvent:file_editor", "ActionEvent:file_editor", "ObservationEvent:file_editor",
		"MessageEvent:agent", "execution_status=finished")
	// Run again: nothing is replayed twice.
	if st := run(); st != StatusFinished || len(tools.calls) != 4 {
		t.Fatalf("second run: %s, %d calls", st, len(tools.calls))
	}
	// The user takes over; without a model that is an error the user can read.
	log.userSays(t, "now add a README")
	if st := run(); st != StatusError {
		t.Fatalf("status %s", st)
	}
	if e := log.bodies(event.KindConversationError)[0].(*event.ConversationErrorEvent); e.Code != "LLMNotConfigured" {
		t.Fatalf("event %+v", e)
	}
}

func TestReplayThenTheModelTakesOver(t *testing.T) {
	replay, _ := ParseReplay(`[{"source":"user","action":"message","args":{"content":"make notes"}},
		{"source":"agent","action":"run","args":{"command":"touch notes.md"}}]`)
	r := newRig(t, 0, llmtest.Text("README added."))
	r.cfg.Replay = replay.Actions
	r.log.userSays(t, replay.Text)
	if st := r.run(); st != StatusFinished || len(r.srv.Requests()) != 0 {
		t.Fatalf("replay: %s with %d model calls", st, len(r.srv.Requests()))
	}
	r.log.userSays(t, "add a README")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	msgs := r.srv.Requests()[0].Messages
	if len(msgs) != 4 || msgs[1].ToolCalls[0].ID != "replay_0" || msgs[2].Text() != "ran touch notes.md\n[Command finished with exit code 0]" {
		t.Fatalf("the model did not see the replay: %+v", msgs)
	}
}
