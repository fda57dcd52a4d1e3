package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// defaultLLM is an OpenAI-compatible model on loopback that answers every request with a
// short text. Every server the tests start uses it as its server-wide model, so that
// conversations can be created (agentd refuses them without a usable model); the agent tests
// point a user's settings at scripted models instead.
var defaultLLM = sync.OnceValue(func() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-e2e", "object": "chat.completion", "created": time.Now().Unix(), "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "OK."}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
		})
	}))
	return srv.URL + "/v1"
})

// defaultLLMEnv configures defaultLLM as the server-wide model.
func defaultLLMEnv() []string {
	return []string{"AGENTD_LLM_MODEL=gpt-4o", "AGENTD_LLM_BASE_URL=" + defaultLLM(), "AGENTD_LLM_API_KEY=sk-e2e-default"}
}

// settleAgents waits until no agent of the client's conversations is running: each answers
// its first message from defaultLLM, and its status and usage change until it has.
func settleAgents(t *testing.T, c *client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page struct {
			Items []struct {
				ExecutionStatus *string `json:"execution_status"`
			} `json:"items"`
		}
		c.do("GET", "/api/v1/app-conversations/search?include_sub_conversations=true", nil, http.StatusOK, &page)
		busy := false
		for _, it := range page.Items {
			busy = busy || (it.ExecutionStatus != nil && *it.ExecutionStatus == "running")
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("agents still running after 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
