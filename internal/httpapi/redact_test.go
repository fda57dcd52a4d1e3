package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/customsecret"

	"github.com/agentd/agentd/internal/gitprovider/providertest"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/secret"
)

// TestSecretsAreMasked: every kind of secret a conversation knows, printed by a command in
// its sandbox or typed by the user, is masked in the events the API serves, in what the
// model is sent, and in the database: the user's and the server's LLM keys, the search key,
// a provider token, the MCP keys and environment of the user's settings and of the
// conversation's own request, and the sandbox's session key. A secret added while the
// conversation runs is masked from then on.
func TestSecretsAreMasked(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice,
		terminal(t, "cat notes.txt"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"read them"}`)),
	)
	secrets := map[string]string{
		"user LLM key":            llmtest.APIKey,
		"server LLM key":          e.cfg.LLMAPIKey,
		"search key":              "search-secret-4471",
		"provider token":          "ghp_provider_secret_9921",
		"settings MCP key":        "mcp-settings-secret-3310",
		"settings MCP env":        "stdio-env-secret-5520",
		"request MCP key":         "mcp-request-secret-7781",
		"token added mid-run":     "glpat-added-later-6651",
		"session key":             "", // known once the sandbox runs
		"token in a user message": "ghp_provider_secret_9921",
	}
	e.must("POST", "/api/settings", alice, map[string]any{
		"search_api_key": secrets["search key"],
		"mcp_config": map[string]any{
			"shttp_servers": []any{map[string]any{"url": "https://mcp.example.com/mcp", "api_key": secrets["settings MCP key"]}},
			"stdio_servers": []any{map[string]any{"name": "fs", "command": "mcp-fs", "env": map[string]any{"FS_TOKEN": secrets["settings MCP env"]}}},
		},
	}, http.StatusOK, nil)
	// The providers know the tokens, so that agentd's check accepts them.
	e.providers["github"].AddUser(secrets["provider token"], providertest.User{Login: "alice"})
	e.providers["gitlab"].AddUser(secrets["token added mid-run"], providertest.User{Login: "alice"})
	e.must("POST", "/api/add-git-providers", alice, map[string]any{
		"provider_tokens": map[string]any{"github": map[string]any{"token": secrets["provider token"]}},
	}, http.StatusOK, nil)

	id := e.v0Create(alice, map[string]any{"mcp_config": map[string]any{
		"sse_servers": []any{map[string]any{"url": "https://sse.example.com/sse", "api_key": secrets["request MCP key"]}},
	}})
	e.v0WaitStatus(alice, id, "RUNNING")
	conv := e.getConversation(alice, id)
	secrets["session key"] = *conv.SessionAPIKey
	c := &agentConv{e: e, key: alice, id: id, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}

	// The token added now is known to the conversation from its next event on.
	e.must("POST", "/api/add-git-providers", alice, map[string]any{
		"provider_tokens": map[string]any{"gitlab": map[string]any{"token": secrets["token added mid-run"]}},
	}, http.StatusOK, nil)
	var notes strings.Builder
	for name, v := range secrets {
		fmt.Fprintf(&notes, "%s: %s\n", name, v)
	}
	e.run(alice, c.sandboxID, fmt.Sprintf("printf '%%s' '%s' > notes.txt", notes.String()))
	c.api("POST", "/events", message("read my notes; my token is "+secrets["token in a user message"], true), http.StatusOK, nil)
	c.waitStatus("finished")

	events := e.must("GET", c.path("/events/search?limit=100"), c.sessionKey, nil, http.StatusOK, nil)
	var sent bytes.Buffer
	for _, req := range srv.Requests() {
		for _, m := range req.Messages {
			sent.WriteString(m.Text())
		}
	}
	db := e.dbFileBytes()
	for name, v := range secrets {
		if strings.Contains(string(events), v) {
			t.Errorf("the %s is in the events the API serves", name)
		}
		if strings.Contains(sent.String(), v) {
			t.Errorf("the %s was sent to the model", name)
		}
		if bytes.Contains(db, []byte(v)) {
			t.Errorf("the %s is in the database", name)
		}
	}
	// The output itself is there, masked: one mask per secret line.
	if n := strings.Count(sent.String(), secret.Mask); n < len(secrets) {
		t.Errorf("the model saw %d masks, want at least %d:\n%s", n, len(secrets), sent.String())
	}
	if !strings.Contains(string(events), "search key: "+secret.Mask) {
		t.Errorf("the observation does not show the masked output:\n%s", events)
	}
}

// TestSecretsMaskedAfterMemoryReturn: once the server has given its memory back, which empties
// the conversations' redactors and the session keys and metrics its listings opened and
// decoded, a conversation's secrets are still masked in what its agent reads next, and the
// listing still shows its session key and metrics.
func TestSecretsMaskedAfterMemoryReturn(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice,
		terminal(t, "cat notes.txt"), llmtest.Calls(llmtest.Call("finish", `{"message":"read them"}`)),
		terminal(t, "cat notes.txt"), llmtest.Calls(llmtest.Call("finish", `{"message":"read them again"}`)),
	)
	token := "ghp_provider_secret_5120"
	e.providers["github"].AddUser(token, providertest.User{Login: "alice"})
	e.must("POST", "/api/add-git-providers", alice, map[string]any{
		"provider_tokens": map[string]any{"github": map[string]any{"token": token}},
	}, http.StatusOK, nil)
	id := e.v0Create(alice, map[string]any{})
	e.v0WaitStatus(alice, id, "RUNNING")
	conv := e.getConversation(alice, id)
	c := &agentConv{e: e, key: alice, id: id, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	e.run(alice, c.sandboxID, fmt.Sprintf("printf '%%s\\n%%s\\n' '%s' '%s' > notes.txt", token, c.sessionKey))

	c.api("POST", "/events", message("read my notes", true), http.StatusOK, nil)
	c.waitStatus("finished")
	listed := func() (sessionKey string, metrics json.RawMessage) {
		var list []struct {
			SessionAPIKey *string         `json:"session_api_key"`
			Metrics       json.RawMessage `json:"metrics"`
		}
		e.must("GET", "/api/v1/app-conversations?ids="+id, alice, nil, http.StatusOK, &list)
		if len(list) != 1 || list[0].SessionAPIKey == nil {
			t.Fatalf("the listing of the conversation: %+v", list)
		}
		return *list[0].SessionAPIKey, list[0].Metrics
	}
	keyBefore, metricsBefore := listed()

	e.app.ReturnMemory()
	if key, metrics := listed(); key != keyBefore || !bytes.Equal(metrics, metricsBefore) || string(metrics) == "null" {
		t.Errorf("after the return, the listing shows session key %q and metrics %s; before, %q and %s",
			key, metrics, keyBefore, metricsBefore)
	}
	c.api("POST", "/events", message("read them again", true), http.StatusOK, nil)
	c.waitCalls(srv, 4)
	c.waitStatus("finished")

	events := string(e.must("GET", c.path("/events/search?limit=100"), c.sessionKey, nil, http.StatusOK, nil))
	for name, v := range map[string]string{"provider token": token, "session key": c.sessionKey} {
		if strings.Contains(events, v) {
			t.Errorf("the %s is in the events", name)
		}
	}
	if n := strings.Count(events, secret.Mask); n < 4 {
		t.Errorf("the events hold %d masks, want 4 (two secrets read twice):\n%s", n, events)
	}
	for _, req := range srv.Requests()[3:] {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), token) || strings.Contains(m.Text(), c.sessionKey) {
				t.Errorf("a secret was sent to the model after the return: %s", m.Text())
			}
		}
	}
}

// TestSecretChangedElsewhereMasked: a secret stored through another replica (another service
// on the same database, which bumps the owner's secrets revision but cannot empty this
// server's cached masks) while the agent waits for the model is masked in the model's answer,
// the first event recorded after it: the record masked for the old revision is refused by the
// store and masked again with the new secret.
func TestSecretChangedElsewhereMasked(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	const token = "elsewhere-secret-4409"
	asked, changed := make(chan struct{}), make(chan struct{})
	e.scripted(alice, llmtest.Step{Func: func(llmtest.RecordedRequest) llmtest.Step {
		close(asked)
		select {
		case <-changed:
		case <-time.After(time.Minute):
		}
		return llmtest.Text("The token is " + token + ".")
	}})
	c := e.startAgent(alice, map[string]any{"initial_message": message("Tell me the token.", true)})
	<-asked

	other := customsecret.NewService(e.app.Store, e.app.Keyring, nil)
	other.OnSecretsChange(func(userID string) {
		if err := e.app.Store.BumpSecretsRevision(context.Background(), userID); err != nil {
			t.Errorf("bump: %v", err)
		}
	})
	if err := other.Create(context.Background(), aliceID, customsecret.Plain{Name: "ELSEWHERE", Value: token}); err != nil {
		t.Fatal(err)
	}
	close(changed)
	c.waitStatus("finished")

	events := string(c.api("GET", "/events/search?limit=100", nil, http.StatusOK, nil))
	if strings.Contains(events, token) {
		t.Errorf("the secret stored elsewhere is in the events:\n%s", events)
	}
	if !strings.Contains(events, "The token is "+secret.Mask) {
		t.Errorf("the model's answer is not there, masked:\n%s", events)
	}
	if bytes.Contains(e.dbFileBytes(), []byte(token)) {
		t.Error("the secret stored elsewhere is in the database")
	}
}
