package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestAgentKillsItsRuntime: an agent whose command kills its sandbox's runtime ends its run
// with the sandbox ERROR at once (not MISSING at the watcher's next pass), saying that the
// runtime exited; the user's next message is refused with that reason, and no event names a
// host path (the runtime's socket, the data directory).
func TestAgentKillsItsRuntime(t *testing.T) {
	e := newEnv(t)
	// The watcher, which the tests run every 100 ms (the server every 5 s), would find the
	// processes gone too and say MISSING, first on a busy machine: it looks only at start here.
	e.watchInterval = time.Hour
	e.restart()
	_, alice := e.newUser("alice")
	e.scripted(alice,
		terminal(t, "kill -9 $PPID"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"never"}`)),
	)
	c := e.startAgent(alice, map[string]any{"initial_message": message("end your runtime", true)})
	c.waitStatus("error")

	sb := e.getSandbox(alice, c.sandboxID)
	if sb == nil || sb.Status != "ERROR" || sb.Detail == nil || !strings.Contains(*sb.Detail, "runtime exited") {
		t.Fatalf("sandbox after its runtime was killed: %+v, want ERROR saying the runtime exited", sb)
	}
	// The errors say what happened, and name nothing of the host. (The process backend's
	// workspace is a host directory, which the system prompt names: only errors are looked at.)
	var said bool
	for _, ev := range c.events() {
		if ev.Kind != "AgentErrorEvent" && ev.Kind != "ConversationErrorEvent" {
			continue
		}
		raw, _ := json.Marshal(ev)
		for _, leak := range []string{e.cfg.DataDir, "runtime.sock", "unix"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("an error event names %q: %s", leak, raw)
			}
		}
		said = said || strings.Contains(string(raw), "runtime exited")
	}
	if !said {
		t.Error("no error event says the runtime exited")
	}

	// The next message is refused with the reason, through the conversation API…
	status, body := e.call("POST", c.path("/events"), alice, message("are you there?", true))
	var d struct {
		Detail string `json:"detail"`
	}
	json.Unmarshal(body, &d)
	if status != http.StatusConflict || !strings.Contains(d.Detail, "sandbox is ERROR") || !strings.Contains(d.Detail, "runtime exited") {
		t.Errorf("a message after the runtime died: %d %s, want 409 saying the runtime exited", status, body)
	}
	// …and through the app server, as OpenHands answers for a sandbox in error.
	status, body = e.call("POST", "/api/v1/app-conversations/"+c.id+"/send-message", alice,
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hello?"}}})
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "error state") {
		t.Errorf("send-message after the runtime died: %d %s, want 503", status, body)
	}
	// …and on the event socket, answered with an error that says why.
	sock := dialSocket(t, c.socketURL(""), keyHeader(alice))
	sock.fullState()
	sock.send(message("still there?", true))
	for {
		ev, _ := sock.next()
		if ev.Kind == "ServerErrorEvent" {
			if !strings.Contains(ev.Detail, "runtime exited") {
				t.Errorf("the socket refused the message with %+v, want the reason", ev)
			}
			break
		}
	}
	for _, ev := range c.events() {
		if ev.Kind == "MessageEvent" && ev.Source == "user" && ev.LLMMessage.Content[0].Text != "end your runtime" {
			t.Errorf("a refused message was recorded: %+v", ev)
		}
	}
}
