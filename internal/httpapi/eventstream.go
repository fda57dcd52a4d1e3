package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sse"
)

// The event stream of a conversation: Server-Sent Events at
// GET /api/v1/app-conversations/{conversation_id}/events/stream, beside the event socket and
// read through the same feed. It opens with the conversation's full state, then sends the
// events after the one the client names (Last-Event-ID, else after_event_id; the whole log
// when neither), then each event as it is stored. Stored events carry their id as the SSE id,
// so that an EventSource that reconnects resumes after the last one it received; what is not
// stored (the full state, a step's progress) carries none. A stream that ends for a reason the
// client should know ends with a "close" event naming it.

// sseRetry is the reconnection delay the stream asks EventSource clients for.
const sseRetry = 2 * time.Second

// Reasons of the close event.
const (
	closeLagged   = "lagged"
	closeDeleted  = "deleted"
	closeShutdown = "shutdown"
	closeError    = "error"
)

func (a *API) eventStream(w http.ResponseWriter, r *http.Request) error {
	convID, err := appConversationID(r)
	if err != nil {
		return err
	}
	var q apitypes.EventStreamQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	var start conversation.FeedStart
	lastID := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	switch {
	case lastID != "":
		start.AfterEventID = lastID
	case q.AfterEventID != nil:
		start.AfterEventID = *q.AfterEventID
	}
	ownerID := caller(r).ID
	if !a.sockets.open() {
		return errStatus(http.StatusServiceUnavailable, reasonShutdown)
	}
	defer a.sockets.done()
	// Before the place is taken: another user's conversation is a 404, never a 429.
	if _, err := a.d.Conversations.Get(r.Context(), ownerID, convID); err != nil {
		return err
	}
	if !a.sockets.join(convID) {
		return errStatus(http.StatusTooManyRequests, fmt.Sprintf(
			"This conversation has %d live streams open, as many as allowed: close one first", a.sockets.o.MaxPerConversation))
	}
	defer a.sockets.leave(convID)
	feed, err := a.d.Conversations.Follow(r.Context(), ownerID, convID, start, a.sockets.o.EventBuffer)
	switch {
	case errors.Is(err, conversation.ErrUnknownEvent) && lastID != "":
		return errStatus(http.StatusBadRequest, "Last-Event-ID names no event of this conversation")
	case errors.Is(err, conversation.ErrUnknownEvent):
		return problem("value_error", "Value error, no event of this conversation has this id", "query", "after_event_id")
	case err != nil:
		return err
	}
	defer feed.Close()
	// Read after the subscription: the state is not older than the first live event.
	state, err := a.fullState(r.Context(), ownerID, convID)
	if err != nil {
		return err
	}

	s, err := sse.Start(w, a.sockets.o.WriteTimeout)
	if err != nil {
		return nil // the client left
	}
	// When the server stops, a write blocked on a client that takes nothing ends soon,
	// instead of holding the shutdown for the write timeout.
	defer s.CutWhen(a.sockets.ctx)()
	if s.Retry(sseRetry) != nil || s.Event("", "", state.Body) != nil {
		return nil
	}
	a.serveEventStream(r.Context(), s, feed, convID)
	return nil
}

// serveEventStream sends the feed's events, and a comment when the stream has been idle for
// a heartbeat, until the client leaves or the stream ends.
func (a *API) serveEventStream(ctx context.Context, s *sse.Writer, feed *event.Feed, convID string) {
	heartbeat := time.NewTicker(a.sockets.o.PingInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return // the client left
		case <-a.sockets.ctx.Done():
			closeStream(s, closeShutdown, "The server is shutting down: reconnect after the last event received.")
			return
		case <-heartbeat.C:
			if s.Comment("keep-alive") != nil {
				return
			}
		case e, ok := <-feed.C:
			if !ok {
				a.eventStreamEnded(ctx, s, feed.Err(), convID)
				return
			}
			id := ""
			if e.Seq != 0 {
				id = e.ID
			}
			if s.Event(id, "", e.Body) != nil {
				return
			}
			heartbeat.Reset(a.sockets.o.PingInterval)
		}
	}
}

// eventStreamEnded closes the stream for the reason its feed ended.
func (a *API) eventStreamEnded(ctx context.Context, s *sse.Writer, err error, convID string) {
	switch {
	case ctx.Err() != nil:
	case a.sockets.ctx.Err() != nil:
		closeStream(s, closeShutdown, "The server is shutting down: reconnect after the last event received.")
	case errors.Is(err, event.ErrLagged):
		a.log.Info("event stream: client fell behind the event stream", "conversation_id", convID)
		closeStream(s, closeLagged, "Fell behind the conversation's events: reconnect after the last event received.")
	case errors.Is(err, event.ErrEnded):
		closeStream(s, closeDeleted, "The conversation was deleted.")
	default:
		a.log.Error("event stream failed", "conversation_id", convID, "err", err)
		closeStream(s, closeError, "Internal Server Error")
	}
}

// fullState is the ConversationStateUpdateEvent full_state that a stream opens with (never
// stored).
func (a *API) fullState(ctx context.Context, ownerID, convID string) (event.Event, error) {
	v, err := a.d.Conversations.Get(ctx, ownerID, convID)
	if err != nil {
		return event.Event{}, err
	}
	value, err := json.Marshal(a.streamState(ctx, ownerID, v))
	if err != nil {
		return event.Event{}, fmt.Errorf("encode full state: %w", err)
	}
	return a.d.Conversations.NewEvent(event.SourceEnvironment, &event.StateUpdateEvent{Key: event.StateFull, Value: value})
}

// streamState is the conversation's whole state, as streams open with it.
func (a *API) streamState(ctx context.Context, ownerID string, v conversation.View) apitypes.StreamState {
	st := apitypes.StreamState{AgentConversationInfo: a.agentConversationInfo(ctx, ownerID, v),
		SandboxID: optString(v.SandboxID), SandboxStatus: string(v.SandboxStatus),
		ConversationStatus: string(conversation.StatusOf(v))}
	tasks, _, err := a.d.Conversations.SearchTasks(ctx, ownerID, conversation.TaskFilter{ConversationID: v.ID},
		conversation.SortCreatedAtDesc, paging.Query{Limit: 1})
	if err != nil {
		a.log.Warn("start task of a stream's state", "conversation_id", v.ID, "err", err)
	} else if len(tasks) == 1 {
		t := tasks[0].State()
		st.StartTask = &t
	}
	return st
}

// closeStream sends the close event that says why the stream ends.
func closeStream(s *sse.Writer, reason, detail string) {
	data, _ := json.Marshal(apitypes.StreamClose{Reason: reason, Detail: detail})
	s.Event("", "close", data)
}
