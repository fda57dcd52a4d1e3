package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// TestConversationSecretsThroughAgentServer follows OpenHands' SDK giving a conversation its
// secrets through the agent server (RemoteConversation(secrets=…), update_secrets): a value,
// a StaticSecret, and a LookupSecret of a secret the sandbox lists (get_secrets). The agent's
// commands get them; no answer, event, model request, database page or file of the sandbox
// holds a value; a looked-up stored secret is taken by reference, so a changed value reaches
// the next command. Bad secrets are 422s that say where, and change nothing. On both stores,
// which keep the secrets with the conversation.
func TestConversationSecretsThroughAgentServer(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testConversationSecrets(t, newEnv(t, withAgentServer)) })
	t.Run("postgres", func(t *testing.T) {
		testConversationSecrets(t, newEnv(t, withAgentServer, withStore(sandboxtest.ShortDir(t), pgtest.Database(t))))
	})
}

func testConversationSecrets(t *testing.T, e *env) {
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	const inlinePlain, staticPlain, rotated = "inline-SDK-PLAINTEXT-0301", "static-SDK-PLAINTEXT-0302", "rotated-SDK-PLAINTEXT-0303"
	plains := []string{inlinePlain, staticPlain, storedSecretPlain, rotated}
	e.must("POST", "/api/v1/secrets", alice, map[string]any{"name": "MY_SECRET", "value": storedSecretPlain}, http.StatusCreated, nil)
	given := make(chan struct{})
	srv := e.scripted(alice,
		terminal(t, printSecret("SDK_INLINE")+"; "+printSecret("SDK_STATIC")+"; "+printSecret("MY_SECRET")),
		llmtest.Text("Used them."),
		terminal(t, printSecret("MY_SECRET")),
		llmtest.Text("Again."),
		// A secret given while the agent runs reaches its next command.
		llmtest.Step{Func: func(llmtest.RecordedRequest) llmtest.Step {
			<-given
			return terminal(t, printSecret("LATE_ONE"))
		}},
		llmtest.Text("Late."),
	)
	// The sandbox's first conversation was given the stored secret; the second, in the same
	// sandbox, none, until the SDK gives it some. Neither has a first message, which would run
	// its agent.
	first := e.startAgent(alice, map[string]any{"secrets": map[string]any{"MY_SECRET": nil}})
	var task v1Task
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": first.sandboxID}, http.StatusOK, &task)
	c := e.startedConv(alice, e.waitTaskReady(alice, task.ID))
	host, _, _ := strings.Cut(c.url, "/api/conversations/")

	var bodies []string
	post := func(t *testing.T, url string, header http.Header, body any, want int) []byte {
		t.Helper()
		answer := e.postJSONAt(t, url, header, body, want)
		bodies = append(bodies, string(answer))
		return answer
	}
	session := http.Header{"X-Session-API-Key": {c.sessionKey}}
	secretsURL := host + "/api/conversations/" + dashed(c.id) + "/secrets"
	var listed struct {
		Secrets []secretItem `json:"secrets"`
	}
	st, b := e.callAt("GET", host+"/api/settings/secrets", session, nil)
	if err := json.Unmarshal(b, &listed); st != http.StatusOK || err != nil || len(listed.Secrets) != 1 || listed.Secrets[0].Name != "MY_SECRET" {
		t.Fatalf("the sandbox's secrets: %d %s", st, b)
	}

	// Refusals first: each says where, quotes no value, and gives nothing.
	for _, tc := range []struct {
		name    string
		secrets any
		loc     string
	}{
		{"a URL agentd does not serve", map[string]any{"X_TOKEN": map[string]any{"kind": "LookupSecret", "url": "https://vault.example/v1/x"}}, `["body","secrets","X_TOKEN","url"]`},
		{"a secret the sandbox was not given", map[string]any{"X_TOKEN": map[string]any{"kind": "LookupSecret", "url": host + "/api/settings/secrets/NOT_GIVEN"}}, `["body","secrets"]`},
		{"a bad name", map[string]any{"1BAD": inlinePlain}, `["body","secrets"]`},
		{"a short value", map[string]any{"X_TOKEN": "abc"}, `["body","secrets"]`},
		{"a value of another type", map[string]any{"X_TOKEN": 12345678}, `["body","secrets","X_TOKEN"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := post(t, secretsURL, session, map[string]any{"secrets": tc.secrets}, http.StatusUnprocessableEntity)
			if !strings.Contains(string(answer), `"loc":`+tc.loc) {
				t.Fatalf("%s, want a problem at %s", answer, tc.loc)
			}
		})
	}
	post(t, secretsURL, session, map[string]any{}, http.StatusUnprocessableEntity)
	post(t, host+"/api/conversations/"+dashed(c.id)+"/secrets", http.Header{"X-Session-API-Key": {bob}}, map[string]any{"secrets": map[string]any{}}, http.StatusNotFound)
	post(t, e.srv.URL+"/agent-server/"+c.sandboxID+"/api/conversations/"+c.id+"/secrets", http.Header{"X-Session-API-Key": {bob}},
		map[string]any{"secrets": map[string]any{"X_TOKEN": inlinePlain}}, http.StatusNotFound)
	if st, b := e.callAt("GET", host+"/api/settings/secrets/X_TOKEN", session, nil); st != http.StatusNotFound {
		t.Fatalf("a refused secret was given: %d %s", st, b)
	}

	// As the SDK sends them.
	answer := post(t, secretsURL, session, map[string]any{"secrets": map[string]any{
		"SDK_INLINE": inlinePlain,
		"SDK_STATIC": map[string]any{"kind": "StaticSecret", "value": staticPlain, "description": "a static one"},
		"MY_SECRET": map[string]any{"kind": "LookupSecret", "url": host + "/api/settings/secrets/MY_SECRET",
			"headers": map[string]any{"X-Session-API-Key": c.sessionKey}, "description": "looked up"},
	}}, http.StatusOK)
	if strings.TrimSpace(string(answer)) != `{"success":true}` {
		t.Fatalf("answer %s", answer)
	}
	c.api("POST", "/events", message("use them", true), http.StatusOK, nil)
	c.waitStatus("finished")
	var out strings.Builder
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" {
			out.WriteString(observationText(ev) + "\n")
		}
	}
	for _, want := range []string{"SDK_INLINE=" + secret.Mask, sha256Hex(inlinePlain), "SDK_STATIC=" + secret.Mask, sha256Hex(staticPlain),
		"MY_SECRET=" + secret.Mask, sha256Hex(storedSecretPlain)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the observations lack %q:\n%s", want, out.String())

		}
	}

	// The looked-up stored secret is the conversation's by reference.
	e.must("PUT", "/api/v1/secrets/MY_SECRET", alice, map[string]any{"value": rotated}, http.StatusOK, nil)
	c.api("POST", "/events", message("once more", true), http.StatusOK, nil)
	c.waitStatus("finished")
	evs := c.events()
	if last := observationText(lastObservation(evs)); !strings.Contains(last, sha256Hex(rotated)) {
		t.Errorf("after the change the command printed %s", last)
	}

	const late = "late-SDK-PLAINTEXT-0304"
	plains = append(plains, late)
	c.api("POST", "/events", message("and now?", true), http.StatusOK, nil)
	e.eventually("the model call", func() bool { return len(srv.Requests()) == 5 })
	post(t, secretsURL, session, map[string]any{"secrets": map[string]any{"LATE_ONE": late}}, http.StatusOK)
	close(given)
	c.waitStatus("finished")
	if last := observationText(lastObservation(c.events())); !strings.Contains(last, "LATE_ONE="+secret.Mask) || !strings.Contains(last, sha256Hex(late)) {
		t.Errorf("a secret given during the run: the command printed %s", last)
	}

	st, b = e.callAt("GET", host+"/api/settings/secrets", session, nil)
	bodies = append(bodies, string(b))
	for _, name := range []string{"LATE_ONE", "MY_SECRET", "SDK_INLINE", "SDK_STATIC"} {
		if st != http.StatusOK || !strings.Contains(string(b), `"`+name+`"`) {
			t.Errorf("the sandbox's secrets after the update: %d %s, want %s among them", st, b, name)
		}
	}
	_, b = e.callAt("GET", c.url+"/events/search?limit=100", session, nil)
	bodies = append(bodies, string(b))
	_, b = e.callAt("GET", c.url, session, nil)
	bodies = append(bodies, string(b))
	for _, body := range bodies {
		for _, p := range plains {
			if strings.Contains(body, p) {
				t.Errorf("an answer holds %q: %s", p, body)
			}
		}
	}
	for _, req := range srv.Requests() {
		for _, p := range plains {
			if strings.Contains(string(req.Body), p) {
				t.Errorf("a request to the model holds %q", p)
			}
		}
	}
	if logs := e.logs.String(); strings.Contains(logs, inlinePlain) || strings.Contains(logs, staticPlain) || strings.Contains(logs, c.sessionKey) {
		t.Error("the log holds a secret")
	}
	e.checkStoreLacks(t, plains)
}

// lastObservation is the last ObservationEvent of evs.
func lastObservation(evs []wireEvent) wireEvent {
	var last wireEvent
	for _, ev := range evs {
		if ev.Kind == "ObservationEvent" {
			last = ev
		}
	}
	return last
}
