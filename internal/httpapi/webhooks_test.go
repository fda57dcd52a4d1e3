package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

type webhookJSON struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	ConversationID *string  `json:"conversation_id"`
	Secret         string   `json:"secret"`
}

// TestWebhookRoutes: registration with its refusals (a 422 at the field that is wrong,
// nothing stored), the secret shown once, ownership, the limit, and the admins' user list.
func TestWebhookRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")

	refused := []struct {
		name string
		body any
		loc  string
		msg  string
	}{
		{"private address for a non-admin", map[string]any{"url": "http://10.1.2.3:9/hook", "events": []string{"*"}}, `"body","url"`, "internal addresses are refused"},
		{"metadata address", map[string]any{"url": "http://169.254.169.254/", "events": []string{"*"}}, `"body","url"`, "internal addresses are refused"},
		// Numeric shorthands of addresses, which some programs take for the address: refused
		// with the rule, even where the allow-list admits the address (loopback, here).
		{"127.1", map[string]any{"url": "http://127.1:9/hook", "events": []string{"*"}}, `"body","url"`, "127.1 is a shorthand of the address 127.0.0.1"},
		{"2130706433", map[string]any{"url": "http://2130706433/hook", "events": []string{"*"}}, `"body","url"`, "2130706433 is a shorthand of the address 127.0.0.1"},
		{"0x7f000001", map[string]any{"url": "https://0x7f000001/hook", "events": []string{"*"}}, `"body","url"`, "0x7f000001 is a shorthand of the address 127.0.0.1"},
		{"0", map[string]any{"url": "http://0:8000/hook", "events": []string{"*"}}, `"body","url"`, "0 is a shorthand of 0.0.0.0, an unspecified address; internal addresses are refused"},
		{"no scheme", map[string]any{"url": "hooks.example.com/x", "events": []string{"*"}}, `"body","url"`, "http or https"},
		{"credentials", map[string]any{"url": "https://u:p@8.8.8.8/x", "events": []string{"*"}}, `"body","url"`, "credentials"},
		{"unknown kind", map[string]any{"url": "https://8.8.8.8/x", "events": []string{"conversation.exploded"}}, `"body","events",0`, ""},
		{"no kinds", map[string]any{"url": "https://8.8.8.8/x", "events": []string{}}, `"body","events"`, ""},
		{"no events", map[string]any{"url": "https://8.8.8.8/x"}, `"body","events"`, ""},
		{"unknown conversation", map[string]any{"url": "https://8.8.8.8/x", "events": []string{"*"}, "conversation_id": "0123456789abcdef0123456789abcdef"}, `"body","conversation_id"`, "conversation not found"},
		{"malformed conversation", map[string]any{"url": "https://8.8.8.8/x", "events": []string{"*"}, "conversation_id": "nope"}, `"body","conversation_id"`, "conversation not found"},
		{"unknown field", map[string]any{"url": "https://8.8.8.8/x", "events": []string{"*"}, "secret": "mine"}, `"body","secret"`, ""},
	}
	for _, tc := range refused {
		status, body := e.call("POST", "/api/v1/webhooks", alice, tc.body)
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), tc.loc) || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s: %d %s; want 422 at [%s] saying %q", tc.name, status, body, tc.loc, tc.msg)
		}
	}
	var list []webhookJSON
	e.must("GET", "/api/v1/webhooks", alice, nil, http.StatusOK, &list)
	if len(list) != 0 {
		t.Fatalf("refused webhooks were stored: %+v", list)
	}

	var created webhookJSON
	e.must("POST", "/api/v1/webhooks", alice, map[string]any{"url": "https://8.8.8.8/hook", "events": []string{"conversation.finished", "conversation.finished", "sandbox.paused"}}, http.StatusCreated, &created)
	if !strings.HasPrefix(created.Secret, "whsec_") || len(created.Events) != 2 || created.ConversationID != nil {
		t.Fatalf("created %+v", created)
	}
	for _, path := range []string{"/api/v1/webhooks", "/api/v1/webhooks/" + created.ID} {
		if body := e.must("GET", path, alice, nil, http.StatusOK, nil); strings.Contains(string(body), created.Secret) || strings.Contains(string(body), "secret") {
			t.Fatalf("GET %s shows the secret: %s", path, body)
		}
	}
	// An admin is not bound by the URL policy.
	e.must("POST", "/api/v1/webhooks", adminKey, map[string]any{"url": "http://10.1.2.3:9/hook", "events": []string{"*"}}, http.StatusCreated, nil)

	// Bob sees nothing of Alice's.
	e.must("GET", "/api/v1/webhooks", bob, nil, http.StatusOK, &list)
	if len(list) != 0 {
		t.Fatalf("bob lists %+v", list)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/webhooks/" + created.ID},
		{"DELETE", "/api/v1/webhooks/" + created.ID},
		{"GET", "/api/v1/webhooks/" + created.ID + "/deliveries"},
		{"POST", "/api/v1/webhooks/" + created.ID + "/deliveries/nope/redeliver"},
	} {
		if status, body := e.call(r.method, r.path, bob, nil); status != http.StatusNotFound {
			t.Errorf("bob %s %s: %d %s, want 404", r.method, r.path, status, body)
		}
	}
	var page struct {
		Items      []any   `json:"items"`
		NextPageID *string `json:"next_page_id"`
	}
	e.must("GET", "/api/v1/webhooks/"+created.ID+"/deliveries?status=failed", alice, nil, http.StatusOK, &page)
	if len(page.Items) != 0 || page.NextPageID != nil {
		t.Fatalf("deliveries of a new webhook: %+v", page)
	}
	e.must("GET", "/api/v1/webhooks/"+created.ID+"/deliveries?status=lost", alice, nil, http.StatusUnprocessableEntity, nil)

	// At most 20 per user.
	for i := 1; i < 20; i++ {
		e.must("POST", "/api/v1/webhooks", alice, map[string]any{"url": fmt.Sprintf("https://8.8.8.8/%d", i), "events": []string{"*"}}, http.StatusCreated, nil)
	}
	e.must("POST", "/api/v1/webhooks", alice, map[string]any{"url": "https://8.8.8.8/21", "events": []string{"*"}}, http.StatusConflict, nil)
	e.must("DELETE", "/api/v1/webhooks/"+created.ID, alice, nil, http.StatusOK, nil)
	e.must("GET", "/api/v1/webhooks/"+created.ID, alice, nil, http.StatusNotFound, nil)
	e.must("POST", "/api/v1/webhooks", alice, map[string]any{"url": "https://8.8.8.8/21", "events": []string{"*"}}, http.StatusCreated, nil)

	// The users' list is the admins'.
	e.must("GET", "/api/v1/users/search", alice, nil, http.StatusForbidden, nil)
	var users struct {
		Items []struct {
			Name    string `json:"name"`
			IsAdmin bool   `json:"is_admin"`
		} `json:"items"`
	}
	e.must("GET", "/api/v1/users/search?limit=2", adminKey, nil, http.StatusOK, &users)
	if len(users.Items) != 2 || !users.Items[0].IsAdmin || users.Items[1].Name != "alice" {
		t.Fatalf("users: %+v", users)
	}
}

// TestWebhookEvents: a user's webhook hears of their conversation's transitions and of its
// sandbox's, each delivered and listed, and nothing of another user's.
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	var mu sync.Mutex
	var got []map[string]any
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err == nil {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}
	}))
	t.Cleanup(rcv.Close)
	seen := func() map[string]map[string]any {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]map[string]any{}
		for _, p := range got {
			data, _ := p["data"].(map[string]any)
			key, _ := p["event"].(string)
			if st, ok := data["execution_status"].(string); ok && key == "conversation.status_changed" {
				key += ":" + st
			}
			out[key] = data
		}
		return out
	}
	var hook webhookJSON
	e.must("POST", "/api/v1/webhooks", alice, map[string]any{"url": rcv.URL, "events": []string{"*"}}, http.StatusCreated, &hook)
	e.scripted(bob, llmtest.Text("Bob's answer."))
	e.startAgent(bob, map[string]any{"initial_message": message("Hi", true)})

	e.scripted(alice, llmtest.Fail(http.StatusUnauthorized, "Incorrect API key provided"))
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	e.eventually("the error delivery", func() bool { return seen()["conversation.error"] != nil },
		func() string { return fmt.Sprint(seen()) })
	e.must("POST", "/api/v1/sandboxes/"+c.sandboxID+"/pause", alice, nil, http.StatusOK, nil)
	e.eventually("the sandbox.paused delivery", func() bool { return seen()["sandbox.paused"] != nil },
		func() string { return fmt.Sprint(seen()) })

	s := seen()
	for _, kind := range []string{"conversation.created", "conversation.status_changed:running", "conversation.status_changed:error"} {
		if s[kind] == nil || s[kind]["conversation_id"] != c.id {
			t.Errorf("%s: %v", kind, s[kind])
		}
	}
	if errData := s["conversation.error"]; errData["conversation_id"] != c.id || errData["execution_status"] != "error" || errData["code"] == "" || errData["detail"] == "" {
		t.Errorf("conversation.error: %v", errData)
	}
	if ids, _ := s["sandbox.paused"]["conversation_ids"].([]any); len(ids) != 1 || ids[0] != c.id || s["sandbox.paused"]["sandbox_id"] != c.sandboxID {
		t.Errorf("sandbox.paused: %v", s["sandbox.paused"])
	}
	mu.Lock()
	for _, p := range got {
		if data, _ := p["data"].(map[string]any); data["final_message"] == "Bob's answer." {
			t.Errorf("alice's webhook got bob's event: %v", p)
		}
	}
	n := len(got)
	mu.Unlock()

	var page struct {
		Items []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ResponseCode int    `json:"response_code"`
		} `json:"items"`
	}
	e.eventually("every delivery recorded as delivered", func() bool {
		e.must("GET", "/api/v1/webhooks/"+hook.ID+"/deliveries?status=delivered&limit=100", alice, nil, http.StatusOK, &page)
		return len(page.Items) >= n
	})
	for _, d := range page.Items {
		if d.ResponseCode != 200 {
			t.Errorf("delivery %+v", d)
		}
	}
}
