package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// Confirmation mode, through the routes OpenHands clients use: actions are rated, risky ones
// wait in waiting_for_confirmation, and the user's answer runs or rejects them.

// rated returns a step that calls the terminal with the model's risk rating.
func rated(t *testing.T, cmd, risk string) llmtest.Step {
	return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": cmd, "security_risk": risk} })
}

// expectResult returns a step that checks the last tool result the model reads, then goes on
// with next.
func expectResult(t *testing.T, want string, next llmtest.Step) llmtest.Step {
	return llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		if got := lastToolResult(req); !strings.Contains(got, want) {
			t.Errorf("the model read %q, want %q in it", got, want)
		}
		return next
	}}
}

// actionRisks lists the conversation's actions as tool=security_risk.
func (c *agentConv) actionRisks() []string {
	c.e.t.Helper()
	var page struct {
		Items []struct {
			ToolName     string `json:"tool_name"`
			SecurityRisk string `json:"security_risk"`
		} `json:"items"`
	}
	c.api("GET", "/events/search?kind=ActionEvent&limit=100", nil, http.StatusOK, &page)
	var out []string
	for _, a := range page.Items {
		out = append(out, a.ToolName+"="+a.SecurityRisk)
	}
	return out
}

// policy is the confirmation policy GET conversation shows.
func (c *agentConv) policy() string {
	c.e.t.Helper()
	var info struct {
		ConfirmationPolicy json.RawMessage `json:"confirmation_policy"`
	}
	c.api("GET", "", nil, http.StatusOK, &info)
	return string(info.ConfirmationPolicy)
}

func (c *agentConv) respond(accept bool, reason string, want int) {
	c.e.t.Helper()
	body := map[string]any{"accept": accept}
	if reason != "" {
		body["reason"] = reason
	}
	c.api("POST", "/events/respond_to_confirmation", body, want, nil)
}

// TestConfirmRisky: a LOW call runs at once; a recursive delete outside the workspace waits
// (the model called it LOW), through a restart of the server and a pause of the sandbox;
// a rejection's reason reaches the model, and an accepted action runs.
func TestConfirmRisky(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	precious := filepath.Join(t.TempDir(), "precious")
	if err := os.MkdirAll(filepath.Join(precious, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	rm := "rm -rf " + precious
	e.scripted(alice,
		rated(t, "echo looked", "LOW"),
		rated(t, rm, "LOW"),
		expectResult(t, "Action rejected: keep that directory", rated(t, rm, "HIGH")),
		expectResult(t, "[Command finished with exit code 0]", llmtest.Calls(llmtest.Call("finish", `{"message":"removed"}`))),
	)
	c := e.startAgent(alice, map[string]any{
		"initial_message":     message("clean up", true),
		"confirmation_policy": map[string]any{"kind": "ConfirmRisky"},
	})
	c.waitStatus("waiting_for_confirmation")
	if got := c.policy(); got != `{"kind":"ConfirmRisky","threshold":"HIGH","confirm_unknown":true}` {
		t.Errorf("confirmation_policy %s", got)
	}
	if got := c.actionRisks(); !slices.Equal(got, []string{"terminal=LOW", "terminal=HIGH"}) {
		t.Errorf("risks %v", got)
	}
	before := labels(c.events())

	e.restart()
	sb := c.sandboxID
	e.must("POST", "/api/v1/sandboxes/"+sb+"/pause", alice, nil, http.StatusOK, nil)
	e.waitSandbox(alice, sb, "PAUSED")
	e.must("POST", "/api/v1/sandboxes/"+sb+"/resume", alice, nil, http.StatusOK, nil)
	e.waitSandbox(alice, sb, "RUNNING")
	if got := c.info().ExecutionStatus; got != "waiting_for_confirmation" {
		t.Fatalf("after a restart and a sandbox pause the agent is %s", got)
	}
	if after := labels(c.events()); !slices.Equal(after, before) {
		t.Fatalf("the log changed while the action waited:\n  %s\nwas:\n  %s", strings.Join(after, "\n  "), strings.Join(before, "\n  "))
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("the pending delete ran: %v", err)
	}

	c.respond(false, "keep that directory", http.StatusOK)
	c.waitStatus("waiting_for_confirmation")
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("the rejected delete ran: %v", err)
	}
	c.respond(true, "", http.StatusOK)
	c.waitStatus("finished")
	if _, err := os.Stat(precious); !os.IsNotExist(err) {
		t.Fatalf("the accepted delete did not run: %v", err)
	}
	c.respond(true, "", http.StatusConflict)
	n := 0
	for _, ev := range c.events() {
		if ev.Kind == "UserRejectObservation" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d rejections in the log: %v", n, labels(c.events()))
	}
}

// TestAlwaysConfirmFromSettings: confirmation_mode in the V0 settings makes every call wait;
// a message while one waits rejects it with the message as the reason; the agent server's
// route changes the policy.
func TestAlwaysConfirmFromSettings(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice,
		rated(t, "echo hi", "LOW"),
		expectResult(t, "Action rejected: do not run it, just say hi", llmtest.Text("hi")),
		rated(t, "echo again", "HIGH"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"ran it"}`)),
	)
	e.must("POST", "/api/settings", alice, map[string]any{"confirmation_mode": true}, http.StatusOK, nil)
	c := e.startAgent(alice, map[string]any{"initial_message": message("greet", true)})
	c.waitStatus("waiting_for_confirmation")
	if got := c.policy(); got != `{"kind":"AlwaysConfirm"}` {
		t.Errorf("confirmation_policy %s", got)
	}
	c.api("POST", "/events", message("do not run it, just say hi", true), http.StatusOK, nil)
	c.waitStatus("finished")
	if got := c.actionRisks(); !slices.Equal(got, []string{"terminal=LOW"}) {
		t.Errorf("risks %v", got)
	}
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" {
			t.Fatalf("the rejected action ran: %v", labels(c.events()))
		}
	}

	c.api("POST", "/confirmation_policy", map[string]any{"policy": map[string]any{"kind": "NeverConfirm"}}, http.StatusOK, nil)
	if got := c.policy(); got != `{"kind":"NeverConfirm"}` {
		t.Errorf("confirmation_policy after the change %s", got)
	}
	c.api("POST", "/events", message("run it after all", true), http.StatusOK, nil)
	c.waitStatus("finished", "waiting_for_confirmation")
	if got := c.info().ExecutionStatus; got != "finished" {
		t.Fatalf("under NeverConfirm the agent is %s", got)
	}

	for _, bad := range []map[string]any{
		{"policy": map[string]any{"kind": "SometimesConfirm"}},
		{"policy": map[string]any{"kind": "ConfirmRisky", "threshold": "UNKNOWN"}},
		{},
	} {
		c.api("POST", "/confirmation_policy", bad, http.StatusUnprocessableEntity, nil)
	}
	c.api("POST", "/events/respond_to_confirmation", map[string]any{"reason": "no accept"}, http.StatusUnprocessableEntity, nil)
}

// TestConfirmRiskyFromV1Settings: the current settings route sets the policy of the
// conversations started after it, as OpenHands' app server reads its conversation settings:
// confirmation mode with the LLM analyzer is ConfirmRisky.
func TestConfirmRiskyFromV1Settings(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice,
		rated(t, "echo hi", "HIGH"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	e.must("POST", "/api/v1/settings", alice, map[string]any{"conversation_settings_diff": map[string]any{
		"confirmation_mode": true, "security_analyzer": "llm"}}, http.StatusOK, nil)
	c := e.startAgent(alice, map[string]any{"initial_message": message("greet", true)})
	c.waitStatus("waiting_for_confirmation")
	if got := c.policy(); !strings.Contains(got, `"kind":"ConfirmRisky"`) {
		t.Errorf("confirmation_policy %s, want ConfirmRisky", got)
	}
	c.api("POST", "/events/respond_to_confirmation", map[string]any{"accept": true}, http.StatusOK, nil)
	c.waitStatus("finished")
}
