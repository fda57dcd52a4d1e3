package httpapi_test

import (
	"net/http"
	"testing"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	e.must("GET", "/alive", "", nil, http.StatusOK, nil)
	var created struct {
		ConversationID string `json:"conversation_id"`
	}
	e.must("POST", "/api/conversations", adminKey, map[string]any{"initial_user_msg": "hi"}, http.StatusOK, &created)
	var info struct {
		Status string `json:"status"`
	}
	e.eventually("conversation running", func() bool {
		e.must("GET", "/api/conversations/"+created.ConversationID, adminKey, nil, http.StatusOK, &info)
		return info.Status == "RUNNING"
	})
}
