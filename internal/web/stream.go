package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sse"
)

// A conversation's page follows its log through a stream of server-rendered fragments (SSE),
// read from the conversation's feed (conversation.Service.Follow, the one resumable way to
// follow a log, which the API's WebSocket and SSE streams read too):
// each event of the log after the last one the page shows, once, in order, each message
// carrying its event's id, so that the browser's EventSource resumes after the last one it
// got when it reconnects (Last-Event-ID), also to a server that restarted meanwhile. An
// action's card is appended and its result later fills the card's slot; the status line is
// rendered again after each burst of events.

// streamMessage is what the page's script applies (see apply in app.js).
type streamMessage struct {
	// Op is "append" (html at the end of the list), "result" (html into the slot Target, or
	// of the last action of call Call), "status" (the status line) or "title".
	Op     string `json:"op"`
	HTML   string `json:"html,omitempty"`
	Target string `json:"target,omitempty"`
	Call   string `json:"call,omitempty"`
	Error  bool   `json:"error,omitempty"`
	Text   string `json:"text,omitempty"`
	// Orphan is a result as an event of its own, for a page without its action.
	Orphan string `json:"orphan,omitempty"`
}

// streamBuffer is how far a page's stream may fall behind the agent before it is closed (the
// browser then reconnects and resumes; the agent never waits).
const streamBuffer = 1024

// liveStream is one open stream, which Close ends.
type liveStream struct {
	stop context.CancelFunc
}

// isClosed reports whether the app was closed.
func (a *App) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// track registers a stream until its handler ends; false when the app is closed.
func (a *App) track(cancel context.CancelFunc) (untrack func(), ok bool) {
	s := &liveStream{stop: cancel}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, false
	}
	a.streams[s] = struct{}{}
	return func() {
		a.mu.Lock()
		delete(a.streams, s)
		a.mu.Unlock()
	}, true
}

func (a *App) conversationStream(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	id := r.PathValue("id")
	v, err := a.d.Conversations.Get(r.Context(), s.User.ID, id)
	if err != nil {
		return err
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	untrack, ok := a.track(cancel)
	if !ok {
		return comeBack(w)
	}
	defer untrack()
	feed, err := a.d.Conversations.Follow(ctx, s.User.ID, id, conversation.FeedStart{AfterEventID: after}, streamBuffer)
	if errors.Is(err, conversation.ErrUnknownEvent) {
		return &webError{http.StatusBadRequest, "The page asked for the events after one this conversation does not have. Reload it."}
	}
	if err != nil {
		return err
	}
	defer feed.Close()

	out, stop, err := startStream(ctx, w)
	if err != nil {
		return nil
	}
	defer stop()
	if err := out.Retry(time.Second); err != nil {
		return nil
	}
	st := &pageStream{a: a, out: out, ownerID: s.User.ID, convID: id, title: v.Title}
	if err := st.status(ctx, v); err != nil {
		return nil
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	// take sends one event of the feed; done says the stream is over.
	take := func(e event.Event, ok bool) (done bool) {
		if !ok {
			st.end(feed.Err())
			return true
		}
		return st.event(e) != nil
	}
	dirty := false
	for {
		// Send what is there, then the status line once the burst is over.
		select {
		case e, ok := <-feed.C:
			if take(e, ok) {
				return nil
			}
			dirty = true
			continue
		default:
		}
		if dirty {
			dirty = false
			if err := st.refresh(ctx); err != nil {
				return nil
			}
		}
		select {
		case e, ok := <-feed.C:
			if take(e, ok) {
				return nil
			}
			dirty = true
		case <-tick.C:
			if err := out.Comment("ping"); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// pageStream renders a conversation's events for its page.
type pageStream struct {
	a               *App
	out             *sse.Writer
	ownerID, convID string
	title           string
}

// event sends one event of the log.
func (p *pageStream) event(e event.Event) error {
	id := e.ID
	if e.Seq == 0 {
		id = "" // not in the log: no point to resume from
	}
	v := viewEvent(e)
	var m streamMessage
	switch {
	case v.Hidden:
		if id == "" {
			return nil
		}
		m.Op = "none" // moves the resume point only
	case v.Result != nil:
		html, err := p.a.fragmentHTML("result", v.Result)
		if err != nil {
			return err
		}
		// Shown on its own when the page lacks its action's card.
		orphan, err := p.a.fragmentHTML("event", v)
		if err != nil {
			return err
		}
		m = streamMessage{Op: "result", Target: v.Result.Slot, Call: v.Result.CallID, Error: v.Result.Error, HTML: html, Orphan: orphan}
		if v.Result.ActionID == "" {
			m.Target = ""
		}
	default:
		html, err := p.a.fragmentHTML("event", v)
		if err != nil {
			return err
		}
		m = streamMessage{Op: "append", HTML: html}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return p.out.Event(id, "", b)
}

// refresh sends the status line as it is now (and the title when it changed).
func (p *pageStream) refresh(ctx context.Context) error {
	v, err := p.a.d.Conversations.Get(ctx, p.ownerID, p.convID)
	if err != nil {
		if errors.Is(err, conversation.ErrNotFound) {
			return nil // its end comes on the feed
		}
		return err
	}
	return p.status(ctx, v)
}

func (p *pageStream) status(_ context.Context, v conversation.View) error {
	html, err := p.a.fragmentHTML("status", newStatusView(v))
	if err != nil {
		return err
	}
	b, _ := json.Marshal(streamMessage{Op: "status", HTML: html})
	if err := p.out.Event("", "", b); err != nil {
		return err
	}
	if v.Title != p.title && strings.TrimSpace(v.Title) != "" {
		p.title = v.Title
		b, _ := json.Marshal(streamMessage{Op: "title", Text: v.Title})
		return p.out.Event("", "", b)
	}
	return nil
}

// end tells the page why its stream ended, when the page should not reconnect.
func (p *pageStream) end(err error) {
	if errors.Is(err, event.ErrEnded) {
		_ = p.out.Event("", "end", []byte("This conversation was deleted."))
	}
	// Otherwise (fallen behind, shutting down) the page reconnects and resumes.
}
