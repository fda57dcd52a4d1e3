package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

const refusedWhy = "internal addresses are refused unless the administrator allows them"

// noInternal is a server whose administrator allows no internal address.
func noInternal(c *config.Config) { c.AllowInternal = nil }

// TestUserURLRefusedWhenStored: a non-admin's llm_base_url that names an internal address
// is a 422 at the field that names the rule, and nothing is stored; an admin may use it.
func TestUserURLRefusedWhenStored(t *testing.T) {
	e := newEnv(t, noInternal)
	_, alice := e.newUser("alice")
	model := llmtest.NewOpenAI(t) // any request reaching it fails the test
	for _, tc := range []struct{ url, msg string }{
		{model.URL(), "llm_base_url resolves to 127.0.0.1, a loopback address; " + refusedWhy},
		{strings.Replace(model.URL(), "127.0.0.1", "localhost", 1), "llm_base_url resolves to 127.0.0.1, a loopback address; " + refusedWhy},
		{"http://169.254.169.254/latest/meta-data/", "llm_base_url resolves to 169.254.169.254, a cloud metadata address; " + refusedWhy},
		{"http://[fd00:ec2::254]/", "llm_base_url resolves to fd00:ec2::254, a cloud metadata address; " + refusedWhy},
		{"http://[::ffff:10.1.2.3]:8000/v1", "llm_base_url resolves to 10.1.2.3, a private address; " + refusedWhy},
		{"http://100.64.0.1/v1", "llm_base_url resolves to 100.64.0.1, a carrier-grade NAT address; " + refusedWhy},
		{"http://0.0.0.0:11434/v1", "llm_base_url resolves to 0.0.0.0, an unspecified address; " + refusedWhy},
		{"http://127.1:11434/v1", "llm_base_url: 127.1 is a shorthand of 127.0.0.1, a loopback address; " + refusedWhy},
		{"http://2130706433/v1", "llm_base_url: 2130706433 is a shorthand of 127.0.0.1, a loopback address; " + refusedWhy},
		{"ftp://llm.example/v1", "URL must start with http:// or https:// and name a host"},
		{"localhost:11434", "URL must start with http:// or https:// and name a host"},
	} {
		status, body := e.call("POST", "/api/settings", alice, map[string]any{"llm_model": "gpt-4o", "llm_base_url": tc.url})
		wantProblem(t, status, body, "value_error", "body", "llm_base_url")
		if !strings.Contains(string(body), `"msg":"Value error, `+tc.msg+`"`) {
			t.Errorf("%s: %s, want the message %q", tc.url, body, tc.msg)
		}
	}
	if status, body := e.call("GET", "/api/settings", alice, nil); status != http.StatusNotFound {
		t.Errorf("settings after refusals: %d %s, want none stored", status, body)
	}

	// An admin is exempt, and the agent reaches the admin's loopback model.
	admin := llmtest.NewOpenAI(t, llmtest.Text("Hello from the local model."))
	e.must("POST", "/api/settings", adminKey, map[string]any{"llm_model": "gpt-4o", "llm_base_url": admin.URL(), "llm_api_key": llmtest.APIKey}, http.StatusOK, nil)
	c := e.startAgent(adminKey, map[string]any{"initial_message": message("hi", true)})
	c.waitStatus("finished")
	if n := len(admin.Requests()); n != 1 {
		t.Fatalf("the admin's model got %d requests, want 1", n)
	}
}

// TestUserURLRefusedWhenConnecting: the policy holds when the connection is made, whatever
// was checked when the URL was stored. Alice stores URLs while the administrator allows
// loopback; once that is withdrawn, her runs end with an error event that names the rule,
// and the model server is never reached.
func TestUserURLRefusedWhenConnecting(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	aliceModel := llmtest.NewOpenAI(t) // any request reaching them fails the test
	bobModel := llmtest.NewOpenAI(t)
	settings := func(url string) map[string]any {
		return map[string]any{"llm_model": "gpt-4o", "llm_base_url": url, "llm_api_key": llmtest.APIKey}
	}
	e.must("POST", "/api/settings", alice, settings(aliceModel.URL()), http.StatusOK, nil)
	// A name the resolver answers with a loopback address when the agent connects.
	e.must("POST", "/api/settings", bob, settings(strings.Replace(bobModel.URL(), "127.0.0.1", "localhost", 1)), http.StatusOK, nil)

	e.cfg.AllowInternal = nil
	e.restart()
	for _, tc := range []struct {
		key, detail string
	}{
		{alice, "the base URL resolves to 127.0.0.1, a loopback address; " + refusedWhy},
		{bob, "the base URL (localhost) resolves to 127.0.0.1, a loopback address; " + refusedWhy},
	} {
		c := e.startAgent(tc.key, map[string]any{"initial_message": message("hi", true)})
		c.waitStatus("error")
		evs := c.events()
		last := evs[len(evs)-2]
		if last.Kind != "ConversationErrorEvent" || last.Code != "LLMInternalAddressError" || !strings.HasSuffix(last.Detail, tc.detail) {
			t.Errorf("error event %+v, want LLMInternalAddressError ending %q", last, tc.detail)
		}
		if strings.Contains(last.Detail, "attempts") {
			t.Errorf("the refusal was retried: %s", last.Detail)
		}
	}
	if n := len(aliceModel.Requests()) + len(bobModel.Requests()); n != 0 {
		t.Fatalf("the internal model servers got %d requests", n)
	}
}
