package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
)

// fastRetry retries model calls without waiting, so that a 429 costs a test nothing.
var fastRetry = llm.RetryPolicy{MaxAttempts: 3, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}

// defaultLLM starts an OpenAI-compatible server that answers every chat completion with a
// short text, and returns its base URL.
func defaultLLM(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-default", "object": "chat.completion", "created": time.Now().Unix(), "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "OK."}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}
