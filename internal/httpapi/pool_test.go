package httpapi_test

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestConversationFromWarmPool: with a warm pool, a conversation's sandbox is claimed from it
// (a claim, no cold start) and holds its owner's session key, its directory is made there (a
// git repository, whose making starts as the claim returns), its agent runs there, the
// claim's log line names the conversation, and the pool fills again once the conversation's
// start is done with its sandbox (the env's hold on the refill would never end by itself).
func TestConversationFromWarmPool(t *testing.T) {
	e := newEnv(t, withPool)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "test -d .git && echo from-the-pool-$((6*7))"), llmtest.Text("Done."))
	const (
		ready = `agentd_sandbox_pool_ready{backend="process",spec="default"}`
		claim = `agentd_sandbox_operation_duration_seconds_count{backend="process",operation="claim"}`
		start = `agentd_sandbox_operation_duration_seconds_count{backend="process",operation="start"}`
		fill  = `agentd_sandbox_operation_duration_seconds_count{backend="process",operation="pool_start"}`
	)
	e.eventually("the pool to fill", func() bool { return e.metrics()[ready] == 1 })
	before := e.metrics()

	c := e.startAgent(alice, map[string]any{"initial_message": message("Say it.", true)})
	c.waitStatus("finished")
	after := e.metrics()
	if d := after[claim] - before[claim]; d != 1 {
		t.Errorf("claims moved by %v, want 1", d)
	}
	if d := after[start] - before[start]; d != 0 {
		t.Errorf("cold starts moved by %v, want 0: the pool was ready", d)
	}
	if sb := e.getSandbox(alice, c.sandboxID); sb == nil || sb.Status != "RUNNING" || sb.SessionAPIKey == nil || *sb.SessionAPIKey != c.sessionKey {
		t.Fatalf("the claimed sandbox: %+v, want RUNNING with the conversation's session key", sb)
	}
	var ran bool
	for _, ev := range c.events() {
		ran = ran || (ev.Kind == "ObservationEvent" && strings.Contains(observationText(ev), "from-the-pool-42"))
	}
	if !ran {
		t.Error("the agent's command did not run in the claimed sandbox, in a git repository")
	}
	var claimed string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, `msg="sandbox started from the warm pool"`) && strings.Contains(l, "sandbox_id="+c.sandboxID) {
			claimed = l
		}
	}
	if !strings.Contains(claimed, "conversation_id="+c.id) {
		t.Errorf("the claim's log line does not name the conversation %s: %q", c.id, claimed)
	}
	e.eventually("the pool to fill again", func() bool {
		m := e.metrics()
		return m[ready] == 1 && m[fill] > before[fill]
	})
}
