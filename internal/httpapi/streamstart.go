package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/agentd/agentd/internal/conversation"
)

// streamStartAppConversation starts a conversation as POST /api/v1/app-conversations does and
// answers, as OpenHands' stream-start, with a JSON array written as the start goes: its first
// element the task as created (WORKING), then one element per saved state, until READY or
// ERROR. The start does not depend on the stream: a client that leaves early finds the task
// with the start-tasks routes. Should the array end before READY or ERROR (the server
// shutting down), the last element is the last state saved; the next process resumes the task.
func (a *API) streamStartAppConversation(w http.ResponseWriter, r *http.Request) error {
	cr, err := a.appCreateRequest(r)
	if err != nil {
		return err
	}
	task, watch, err := a.d.Conversations.CreateWatched(r.Context(), caller(r).ID, cr)
	if err != nil {
		return err
	}
	defer watch.Stop()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(prefix string, t conversation.StartTask) bool {
		b, err := json.Marshal(a.startTask(t))
		if err != nil {
			return false
		}
		if _, err := w.Write(append([]byte(prefix), b...)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("[\n", task) {
		return nil
	}
	for done := false; !done; {
		select {
		case t, ok := <-watch.C:
			if !ok {
				done = true
				break
			}
			if !write(",\n", t) {
				return nil
			}
			done = t.Status == conversation.TaskReady || t.Status == conversation.TaskError
		case <-r.Context().Done():
			return nil
		case <-a.sockets.ctx.Done():
			done = true
		}
	}
	w.Write([]byte("]"))
	return nil
}
