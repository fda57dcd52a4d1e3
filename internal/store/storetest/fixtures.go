package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store"
)

// Owners used across the suite. B must never see, count, change or delete what A owns.
const (
	ownerA = "user-a"
	ownerB = "user-b"
)

// t0 is the suite's epoch. at(i) is i seconds after it; times are in whole microseconds.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

func ptr[T any](v T) *T { return &v }

func newUser(id string, i int) auth.User {
	return auth.User{ID: id, Name: "name of " + id, CreatedAt: at(i)}
}

func newAPIKey(id, userID string, i int) auth.APIKey {
	h := sha256.Sum256([]byte("secret key " + id))
	return auth.APIKey{
		ID:        id,
		UserID:    userID,
		Name:      "key " + id,
		Prefix:    "ak_" + id[:min(4, len(id))],
		Hash:      h[:],
		CreatedAt: at(i),
	}
}

func newSpec(id string, i int) sandbox.Spec {
	return sandbox.Spec{
		ID:          id,
		Description: "spec " + id,
		Command:     []string{"agentd", "runtime", "--verbose"},
		InitialEnv:  map[string]string{"LANG": "C.UTF-8", "HOME": "/workspace"},
		WorkingDir:  "/workspace",
		Image:       "ghcr.io/agentd/runtime:1",
		Network:     sandbox.NetworkNone,
		Limits:      sandbox.Limits{MemoryBytes: 1 << 30, CPUs: 1.5, PIDs: 512},
		CreatedAt:   at(i),
	}
}

func newSandbox(owner, id string, i int, status sandbox.Status) sandbox.Sandbox {
	return sandbox.Sandbox{
		ID:               id,
		OwnerID:          owner,
		SpecID:           "spec-default",
		Backend:          "process",
		Node:             "node-a",
		Status:           status,
		SessionKeySealed: []byte("sealed session key of " + id),
		SessionKeyHash:   sandbox.HashSessionKey("session key of " + id),
		Instance: sandbox.Instance{
			ID:        id,
			Endpoint:  "unix:/run/agentd/" + id + ".sock",
			Workspace: "/workspace",
			State:     json.RawMessage(`{"pid": 4242, "start": 17}`),
		},
		CreatedAt: at(i),
		UpdatedAt: at(i),
	}
}

func newConversation(owner, id string, i int) conversation.Conversation {
	return conversation.Conversation{
		ID:                 id,
		OwnerID:            owner,
		Version:            conversation.V1,
		Title:              "conversation " + id,
		SelectedRepository: ptr("acme/api"),
		SelectedBranch:     ptr("main"),
		GitProvider:        ptr(gitprovider.GitHub),
		PRNumbers:          []int{7, 12},
		LLMModel:           ptr("model-a"),
		Metrics:            json.RawMessage(`{"accumulated_cost": 0.5}`),
		RequestSealed:      []byte("sealed request of " + id),
		SecretNames:        []string{"API_TOKEN", "DEPLOY_KEY"},
		SecretsSealed:      []byte("sealed secrets of " + id),
		ConfirmationPolicy: confirm.Always,
		Tags:               map[string]string{"source": "storetest"},
		WorkDir:            conversation.ProjectDir,
		CreatedAt:          at(i),
		UpdatedAt:          at(i),
	}
}

func newCustomSecret(name string, i int) customsecret.Secret {
	return customsecret.Secret{
		Name:        name,
		Description: "secret " + name,
		ValueSealed: []byte("sealed value of " + name),
		CreatedAt:   at(i),
		UpdatedAt:   at(i),
	}
}

func newTask(c conversation.Conversation) conversation.StartTask {
	return conversation.StartTask{
		ID:             "task-" + c.ID,
		OwnerID:        c.OwnerID,
		Status:         conversation.TaskWorking,
		ConversationID: c.ID,
		Request:        json.RawMessage(`{"initial_message": {"content": "hi"}}`),
		CreatedAt:      c.CreatedAt,
		UpdatedAt:      c.CreatedAt,
	}
}

// newEvent makes event n of a conversation; kinds alternate so that filters have work.
func newEvent(convID, id string, n int) event.Event {
	kind := "MessageEvent"
	if n%2 == 1 {
		kind = "ActionEvent"
	}
	return event.Event{
		ID:             id,
		ConversationID: convID,
		Kind:           kind,
		Source:         event.SourceAgent,
		Timestamp:      at(n),
		Body:           json.RawMessage(fmt.Sprintf(`{"id": %q, "kind": %q, "n": %d}`, id, kind, n)),
	}
}

func newSettings(userID string, i int) settings.Record {
	return settings.Record{
		UserID:    userID,
		Values:    json.RawMessage(`{"llm_model": "model-a", "language": "en"}`),
		Secrets:   map[string][]byte{"llm_api_key": []byte("sealed llm key of " + userID)},
		UpdatedAt: at(i),
	}
}

// createConversation stores c with its start task and no events, or fails the test.
func createConversation(t *testing.T, s store.Store, c conversation.Conversation) conversation.StartTask {
	t.Helper()
	task := newTask(c)
	ok(t, "create conversation "+c.ID, s.CreateConversation(t.Context(), c, task, nil, conversation.Claim{}))
	return task
}

// view is what GetConversation should return for c with no sandbox and its first task.
func view(c conversation.Conversation, task conversation.StartTask) conversation.View {
	return conversation.View{
		Conversation:  c,
		SandboxStatus: sandbox.StatusMissing,
		TaskStatus:    task.Status,
		TaskDetail:    task.Detail,
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, v := range items {
		out[i] = id(v)
	}
	return out
}

func viewID(v conversation.View) string { return v.ID }
