package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

const agentAdminKey = "e2e-agent-admin-key-0123456789"

// logEvent is what these tests read of an event.
type logEvent struct {
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	Source   string `json:"source"`
	ToolName string `json:"tool_name"`
	Key      string `json:"key"`
	Value    any    `json:"value"`
	Error    string `json:"error"`
	// Timestamp is when the server recorded it, for the timelines of failure messages.
	Timestamp string `json:"timestamp"`
}

// timeline lists evs one a line, each with the time it was recorded: what a failure message
// needs to tell which replica or step recorded what when.
func timeline(evs []logEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s", ev.Timestamp, ev.label())
	}
	return b.String()
}

func (ev logEvent) label() string {
	switch ev.Kind {
	case "ActionEvent", "ObservationEvent":
		return ev.Kind + ":" + ev.ToolName
	case "MessageEvent":
		return ev.Kind + ":" + ev.Source
	case "ConversationStateUpdateEvent":
		if s, ok := ev.Value.(string); ok {
			return ev.Key + "=" + s
		}
		return ev.Key
	}
	return ev.Kind
}

// conversationLog reads a conversation's whole log through /api/v1/events.
func conversationLog(c *client, convID string) []logEvent {
	c.t.Helper()
	var all []logEvent
	page := ""
	for {
		var p struct {
			Items      []logEvent `json:"items"`
			NextPageID *string    `json:"next_page_id"`
		}
		c.do("GET", "/api/v1/events/search?conversation_id__eq="+convID+"&page_id="+url.QueryEscape(page), nil, http.StatusOK, &p)
		all = append(all, p.Items...)
		if p.NextPageID == nil {
			return all
		}
		page = *p.NextPageID
	}
}

func logLabels(evs []logEvent) []string {
	var out []string
	for _, ev := range evs {
		switch ev.Key {
		case "stats", "start_task", "sandbox_status", "conversation_status": // not the agent's
		default:
			out = append(out, ev.label())
		}
	}
	return out
}

var workspaceRE = regexp.MustCompile(`a workspace directory at (\S+)\. `)

// waitForFile is a shell command that waits until the file at path exists, for a minute at
// most: a command a test kills something in the middle of, whatever the machine's speed.
// path holds no single quote.
func waitForFile(path string) string {
	return "i=0; while [ ! -e '" + path + "' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"
}

// slowCallEnv lets a terminal call wait as long as its command prints nothing: the command a
// server is killed in prints nothing until released, and at the default no-change timeout
// (30 s) its call would return before the kill on a machine slow enough, and the server record
// its answer.
const slowCallEnv = "AGENTD_TERMINAL_NO_CHANGE_TIMEOUT=10m"

// untilKilled is a model's step that never answers: the server is killed while it waits.
var untilKilled = llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}

// startAgent points the admin's model at model and starts a conversation with message; it
// returns the conversation's id once its start task is ready.
func startAgent(admin *client, model *llmtest.Server, message string) string {
	admin.do("POST", "/api/settings", map[string]any{"llm_model": "gpt-4o", "llm_base_url": model.URL(), "llm_api_key": llmtest.APIKey}, http.StatusOK, nil)
	task := admin.startConversationV1(message)
	return *admin.waitTaskReady(task.ID).AppConversationID
}

// waitFinished waits until the conversation's log ends with the agent finished.
func waitFinished(t *testing.T, admin *client, conv string) {
	t.Helper()
	waitFor(t, 20*time.Second, "the agent to finish", func() (bool, string) {
		got := logLabels(conversationLog(admin, conv))
		return got[len(got)-1] == "execution_status=finished", strings.Join(got, ",")
	})
}

// TestAgentSurvivesKill9: kill -9 of agentd serve in the middle of a tool call and in the
// middle of a model call loses no recorded event; each restarted server picks the
// conversation up again, answering the interrupted tool call with an error the model sees.
func TestAgentSurvivesKill9(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + agentAdminKey, slowCallEnv}
	var workspace atomic.Value // the sandbox's workspace, read from the system prompt
	workspace.Store("")
	// The command the server is killed in waits for this file, which only the end of the test
	// makes (or at most a minute): it runs until the kill however slow the machine.
	release := filepath.Join(t.TempDir(), "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	model := llmtest.NewOpenAI(t,
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if m := workspaceRE.FindStringSubmatch(req.System); m != nil {
				workspace.Store(m[1])
			}
			return llmtest.Calls(llmtest.Call("terminal", `{"command":"`+waitForFile(release)+`; echo first"}`))
		}},
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if last := req.Last(); last.Role != llm.RoleTool || !strings.Contains(last.Text(), "restart") {
				t.Errorf("after the restart the model was sent %+v, want the interrupted call's error", last)
			}
			args, _ := json.Marshal(map[string]string{"command": "create", "path": filepath.Join(workspace.Load().(string), "after.txt"), "file_text": "ok\n"})
			return llmtest.Calls(llm.ToolCall{Name: "file_editor", Arguments: string(args)})
		}},
		untilKilled,
		llmtest.Text("All done."),
	)

	s := startServer(t, dir, env)
	admin := s.client(agentAdminKey)
	conv := startAgent(admin, model, "Run the slow command, then write after.txt.")

	// Kill 1: while the command runs in the sandbox.
	waitFor(t, 20*time.Second, "the command to start", func() (bool, string) {
		got := logLabels(conversationLog(admin, conv))
		return slices.Contains(got, "ActionEvent:terminal"), strings.Join(got, ",")
	})
	before := conversationLog(admin, conv)
	s.kill()
	waitDataDirFree(t, dir)

	// Kill 2: while the model is asked for the step after the file was written.
	s = startServer(t, dir, env)
	admin = s.client(agentAdminKey)
	waitFor(t, 20*time.Second, "the third model call", func() (bool, string) {
		return len(model.Requests()) >= 3, strings.Join(logLabels(conversationLog(admin, conv)), ",")
	})
	middle := conversationLog(admin, conv)
	s.kill()
	waitDataDirFree(t, dir)

	s = startServer(t, dir, env)
	admin = s.client(agentAdminKey)
	waitFinished(t, admin, conv)
	after := conversationLog(admin, conv)

	for _, prefix := range [][]logEvent{before, middle} {
		if len(after) < len(prefix) {
			t.Fatalf("the log shrank from %d to %d events", len(prefix), len(after))
		}
		for i, ev := range prefix {
			if after[i].ID != ev.ID {
				t.Fatalf("event %d was %s (%s), is %s (%s) after the restarts", i, ev.ID, ev.label(), after[i].ID, after[i].label())
			}
		}
	}
	want := []string{"MessageEvent:user", "SystemPromptEvent", "execution_status=running",
		"ActionEvent:terminal", "AgentErrorEvent",
		"ActionEvent:file_editor", "ObservationEvent:file_editor",
		"MessageEvent:agent", "execution_status=finished"}
	if got := logLabels(after); !slices.Equal(got, want) {
		t.Fatalf("log after the restarts:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, ev := range after {
		if ev.Kind == "AgentErrorEvent" && !strings.Contains(ev.Error, "restart") {
			t.Errorf("interrupted call answered with %q", ev.Error)
		}
	}
	if n := len(model.Requests()); n != 4 {
		t.Errorf("%d model calls, want 4 (the interrupted one made again)", n)
	}
	if b, err := os.ReadFile(filepath.Join(workspace.Load().(string), "after.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("after.txt: %q, %v", b, err)
	}
	if code, _ := s.stop(); code != 0 {
		t.Errorf("server exited %d", code)
	}
}

// TestServeWithoutItsPortDoesNothing: a server that cannot bind one of its addresses exits
// before it takes anything up. The conversation a killed server left in the middle of a model
// call is not run again (no model call, no sandbox touched) by a server whose agent-server
// address is someone else's; the next server that can listen runs it to its end.
func TestServeWithoutItsPortDoesNothing(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	env := []string{"AGENTD_ADMIN_KEY=" + agentAdminKey}
	model := llmtest.NewOpenAI(t,
		untilKilled,
		llmtest.Text("All done."),
	)
	s := startServer(t, dir, env)
	admin := s.client(agentAdminKey)
	conv := startAgent(admin, model, "Say that you are done.")
	waitFor(t, 20*time.Second, "the first model call", func() (bool, string) {
		return len(model.Requests()) == 1, strings.Join(logLabels(conversationLog(admin, conv)), ",")
	})
	s.kill()
	waitDataDirFree(t, dir)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	refused := launchServer(t, dir, env, "--agent-server-addr", taken.Addr().String())
	stderr := refused.stderr
	select {
	case <-refused.done:
	case <-time.After(time.Minute):
		t.Fatalf("agentd serve without its agent-server address still runs after a minute\nstderr:\n%s", stderr)
	}
	if code := exitCode(refused.waitErr); code == 0 || !strings.Contains(stderr.String(), "agent_server_addr") {
		t.Fatalf("agentd serve without its agent-server address exited %d:\n%s", code, stderr)
	}
	for _, did := range []string{"running conversation", "sandbox reconciled", "sandbox started", "orphan"} {
		if strings.Contains(stderr.String(), did) {
			t.Errorf("agentd serve without its agent-server address logged %q:\n%s", did, stderr)
		}
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("the model had %d calls after the server that could not listen, want 1", n)
	}

	s = startServer(t, dir, env)
	admin = s.client(agentAdminKey)
	waitFinished(t, admin, conv)
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the interrupted one made again once)", n)
	}
	if code, _ := s.stop(); code != 0 {
		t.Errorf("server exited %d", code)
	}
}
