package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/secret"
)

const (
	storedSecretPlain  = "stored-MY-SECRET-PLAINTEXT-0201"
	rotatedSecretPlain = "rotated-MY-SECRET-PLAINTEXT-0202"
	inlineSecretPlain  = "inline-TOKEN-PLAINTEXT-0203"
)

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// printSecret is a command that prints the variable, masked in what anyone sees, and the
// SHA-256 of its value, which shows the value reached the command.
func printSecret(name string) string {
	return fmt.Sprintf(`echo "%s=$%s"; printf '%%s' "$%s" | sha256sum`, name, name, name)
}

// TestSecretsReachCommands: a conversation that names a stored secret and gives one inline
// hands both to its agent's commands as environment variables: the commands get the values,
// and every event, every answer of the API, every request to the model, the database and the
// sandbox's files show them masked or not at all. A value changed during the conversation
// reaches the next command and is masked too. The model is told the secrets' names.
func TestSecretsReachCommands(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	rec := &bodyRecorder{e: e}
	rec.must("POST", "/api/v1/secrets", alice, map[string]any{
		"name": "MY_SECRET", "description": "the staging API", "value": storedSecretPlain,
	}, http.StatusCreated)
	rec.must("POST", "/api/v1/secrets", alice, map[string]any{"name": "NOT_GIVEN", "value": "not-given-PLAINTEXT-0204"}, http.StatusCreated)
	srv := e.scripted(alice,
		terminal(t, printSecret("MY_SECRET")),
		terminal(t, printSecret("INLINE_TOKEN")),
		terminal(t, `echo "${NOT_GIVEN-not given}"`),
		llmtest.Calls(llmtest.Call("finish", `{"message":"used them"}`)),
	)

	var task v1Task
	if err := json.Unmarshal(rec.must("POST", "/api/v1/app-conversations", alice, map[string]any{
		"initial_message": message("use my secrets", true),
		"secrets":         map[string]any{"MY_SECRET": nil, "INLINE_TOKEN": inlineSecretPlain},
	}, http.StatusOK), &task); err != nil {
		t.Fatal(err)
	}
	// The start task shows the request without the values.
	if got, want := task.Request["secrets"], map[string]any{"INLINE_TOKEN": "**********", "MY_SECRET": nil}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the start task shows secrets %v, want %v", got, want)
	}
	ready := e.waitTask(alice, task.ID, "READY")
	conv := e.getConversation(alice, *ready.AppConversationID)
	c := &agentConv{e: e, key: alice, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	c.waitStatus("finished")

	outputs := map[string]string{}
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" {
			outputs[observationText(ev)] = ""
		}
	}
	var all strings.Builder
	for o := range outputs {
		all.WriteString(o + "\n")
	}
	for _, want := range []string{
		"MY_SECRET=" + secret.Mask, sha256Hex(storedSecretPlain),
		"INLINE_TOKEN=" + secret.Mask, sha256Hex(inlineSecretPlain),
		"not given",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the observations lack %q:\n%s", want, all.String())
		}
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	system := reqs[0].System
	if !strings.Contains(system, "<CUSTOM_SECRETS>") || !strings.Contains(system, "* MY_SECRET: the staging API") ||
		!strings.Contains(system, "* INLINE_TOKEN") || strings.Contains(system, "NOT_GIVEN") {
		t.Errorf("the system prompt does not name the conversation's secrets:\n%s", system[max(0, len(system)-600):])
	}

	// A value changed now reaches the next command, masked like the first.
	rec.must("PUT", "/api/v1/secrets/MY_SECRET", alice, map[string]any{"value": rotatedSecretPlain}, http.StatusOK)
	srv.Push(terminal(t, printSecret("MY_SECRET")), llmtest.Text("done again"))
	c.api("POST", "/events", message("once more", true), http.StatusOK, nil)
	c.waitStatus("finished")
	evs := c.events()
	last := ""
	for _, ev := range evs {
		if ev.Kind == "ObservationEvent" {
			last = observationText(ev)
		}
	}
	if !strings.Contains(last, "MY_SECRET="+secret.Mask) || !strings.Contains(last, sha256Hex(rotatedSecretPlain)) {
		t.Errorf("after the change the command printed:\n%s", last)
	}

	t.Run("sandbox routes", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		rec := rec.in(t)
		var names struct {
			Secrets []secretItem `json:"secrets"`
		}
		if err := json.Unmarshal(rec.must("GET", "/api/v1/sandboxes/"+c.sandboxID+"/settings/secrets", c.sessionKey, nil, http.StatusOK), &names); err != nil {
			t.Fatal(err)
		}
		desc := "the staging API"
		if want := []secretItem{{Name: "INLINE_TOKEN"}, {Name: "MY_SECRET", Description: &desc}}; !reflect.DeepEqual(names.Secrets, want) {
			t.Fatalf("sandbox secrets %+v, want %+v", names.Secrets, want)
		}
		status, body := e.call("GET", "/api/v1/sandboxes/"+c.sandboxID+"/settings/secrets/MY_SECRET", c.sessionKey, nil)
		if status != http.StatusOK || string(body) != rotatedSecretPlain {
			t.Fatalf("MY_SECRET through the sandbox route: %d %q", status, body)
		}
		for _, path := range []string{"/settings/secrets/NOT_GIVEN", "/settings/secrets/NOPE"} {
			if status, body := rec.call("GET", "/api/v1/sandboxes/"+c.sandboxID+path, c.sessionKey, nil); status != http.StatusNotFound {
				t.Fatalf("%s: %d %s, want 404", path, status, body)
			}
		}
		// A user's API key, even the owner's, reads no value: only the sandbox's key does.
		for _, key := range []string{alice, "", "wrong-key-0123456789"} {
			for _, path := range []string{"/settings/secrets", "/settings/secrets/MY_SECRET"} {
				if status, body := rec.call("GET", "/api/v1/sandboxes/"+c.sandboxID+path, key, nil); status != http.StatusUnauthorized {
					t.Fatalf("%s with key %q: %d %s, want 401", path, key, status, body)
				}
			}
		}
		// Another sandbox's key is not this one's.
		other := e.runningSandbox(alice)
		otherKey := *e.getSandbox(alice, other).SessionAPIKey
		if status, body := rec.call("GET", "/api/v1/sandboxes/"+c.sandboxID+"/settings/secrets", otherKey, nil); status != http.StatusUnauthorized {
			t.Fatalf("another sandbox's key: %d %s, want 401", status, body)
		}
		var none struct {
			Secrets []secretItem `json:"secrets"`
		}
		json.Unmarshal(rec.must("GET", "/api/v1/sandboxes/"+other+"/settings/secrets", otherKey, nil, http.StatusOK), &none)
		if len(none.Secrets) != 0 {
			t.Fatalf("a sandbox without conversations lists %+v", none.Secrets)
		}
	})

	// Nothing shows a value: the events, the API's answers, the model's requests, the
	// database, the sandbox's files and logs, the runtime's environment.
	plains := []string{storedSecretPlain, rotatedSecretPlain, inlineSecretPlain}
	for _, path := range []string{c.path("/events/search?limit=100"), c.path(""), "/api/v1/app-conversations?ids=" + c.id,
		"/api/v1/app-conversations/start-tasks?ids=" + task.ID, "/api/v1/events/search?conversation_id__eq=" + c.id, "/api/v1/secrets/search"} {
		rec.must("GET", path, alice, nil, http.StatusOK)
	}
	rec.checkNone(t, plains)
	for _, req := range srv.Requests() {
		for _, p := range plains {
			if strings.Contains(string(req.Body), p) {
				t.Errorf("a request to the model holds %q", p)
			}
		}
	}
	e.checkDataDirLacks(t, plains)
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", e.runtimePID(c.sandboxID))); err == nil {
		for _, p := range plains {
			if strings.Contains(string(env), p) {
				t.Errorf("the runtime's environment holds %q", p)
			}
		}
	} else {
		t.Logf("the runtime's environment is not readable here: %v", err)
	}
}

// TestStartSecretsValidation: a start request's secrets must name stored secrets that exist
// and give inline ones good names and values; each mistake is a 422 at secrets, and nothing
// is started.
func TestStartSecretsValidation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.must("POST", "/api/v1/secrets", bob, map[string]any{"name": "BOBS", "value": "bobs-value-PLAINTEXT-0301"}, http.StatusCreated, nil)
	e.must("POST", "/api/v1/secrets", alice, map[string]any{"name": "MINE", "value": "alice-value-PLAINTEXT-0302"}, http.StatusCreated, nil)
	for _, tc := range []struct {
		name    string
		secrets any
		loc     []any
	}{
		{"a stored secret that does not exist", []any{"NOPE"}, []any{"body", "secrets"}},
		{"another user's secret", []any{"MINE", "BOBS"}, []any{"body", "secrets"}},
		{"null for one that does not exist", map[string]any{"NOPE": nil}, []any{"body", "secrets"}},
		{"an inline name that is no variable name", map[string]any{"MY-TOKEN": "long-enough-value"}, []any{"body", "secrets"}},
		{"an inline value too short to mask", map[string]any{"PIN": "1234"}, []any{"body", "secrets"}},
		{"a value that is no string", map[string]any{"N": 5}, []any{"body", "secrets", "N"}},
		{"a name that is no string", []any{5}, []any{"body", "secrets", 0}},
		{"neither object nor list", "MINE", []any{"body", "secrets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"secrets": tc.secrets})
			wantProblem(t, status, body, "", tc.loc...)
		})
	}
	var n int
	e.must("GET", "/api/v1/app-conversations/count", alice, nil, http.StatusOK, &n)
	if n != 0 {
		t.Fatalf("refused requests created %d conversations", n)
	}
	// The list of stored names is accepted and echoed as it came.
	task := e.startConversation(alice, map[string]any{"secrets": []any{"MINE"}})
	if got := task.Request["secrets"]; !reflect.DeepEqual(got, []any{"MINE"}) {
		t.Fatalf("echoed secrets %v", got)
	}
	e.waitTask(alice, task.ID, "READY")
}
