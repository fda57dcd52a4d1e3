package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sse"
)

// The conversation list keeps its rows current: a stream (SSE) that renders a row again
// whenever its conversation has a new event (its status, its cost), and says when one is
// deleted. A row only shows the present, so nothing needs resuming: at the start of each
// stream (a reconnect too), the rows that changed since the page showed them are rendered
// again.

// maxLiveRows bounds the conversations one list stream follows (a page shows 20).
const maxLiveRows = 100

// rowsBuffer is how many events of one conversation may wait; a row that falls behind is
// rendered again from the store, which is all it needs.
const rowsBuffer = 16

func (a *App) conversationRows(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	var ids []string
	for id := range strings.SplitSeq(r.URL.Query().Get("ids"), ",") {
		if id = strings.TrimSpace(id); id != "" && len(ids) < maxLiveRows {
			ids = append(ids, id)
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	untrack, ok := a.track(cancel)
	if !ok {
		return comeBack(w)
	}
	defer untrack()

	// One goroutine per conversation says when its row changed.
	changed := make(chan string, len(ids)+1)
	gone := make(chan string, len(ids)+1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// seen are the versions of the rows as the page shows them (convRow.version), in the
	// order of ids.
	seen := strings.Split(r.URL.Query().Get("seen"), ",")
	dirty := map[string]bool{}
	for i, id := range ids {
		// Subscribed before the row is read: a change after the read comes as an event, and
		// one before it shows in the read, so none is lost between the page and the stream
		// (or a reconnect).
		sub, err := a.d.Conversations.Subscribe(ctx, id, rowsBuffer)
		if err != nil {
			continue // the store does not answer: the page's rows stay as they are
		}
		v, err := a.d.Conversations.Get(ctx, s.User.ID, id)
		if err != nil {
			sub.Close()
			continue // not the caller's, or deleted: not followed
		}
		if i >= len(seen) || newConvRow(v).version() != seen[i] {
			dirty[id] = true // changed since the page showed it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.watchRow(ctx, id, sub, changed, gone)
		}()
	}
	out, stop, err := startStream(ctx, w)
	if err != nil {
		return nil
	}
	defer stop()
	for id := range dirty {
		if err := a.sendRow(ctx, out, s.User.ID, id); err != nil {
			return nil
		}
		delete(dirty, id)
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case id := <-changed:
			dirty[id] = true
			// Gather the rest of the burst before rendering.
			for len(changed) > 0 {
				dirty[<-changed] = true
			}
			for id := range dirty {
				if err := a.sendRow(ctx, out, s.User.ID, id); err != nil {
					return nil
				}
				delete(dirty, id)
			}
		case id := <-gone:
			b, _ := json.Marshal(streamMessage{Op: "gone", Target: "row-" + id})
			if err := out.Event("", "", b); err != nil {
				return nil
			}
		case <-tick.C:
			if err := out.Comment("ping"); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// watchRow says on changed whenever the conversation has new events, and on gone when it is
// deleted, following sub, its subscription, and the next ones if it falls behind.
func (a *App) watchRow(ctx context.Context, id string, sub *event.Subscription, changed, gone chan<- string) {
	for {
		for open := true; open; {
			select {
			case _, ok := <-sub.C:
				if !ok {
					open = false
					break
				}
				select {
				case changed <- id:
				default: // a change of it is waiting already
				}
			case <-ctx.Done():
				sub.Close()
				return
			}
		}
		if sub.Ended() {
			select {
			case gone <- id:
			case <-ctx.Done():
			}
			return
		}
		// Fallen behind: render it again and follow on.
		select {
		case changed <- id:
		default:
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		if sub, err = a.d.Conversations.Subscribe(ctx, id, rowsBuffer); err != nil {
			return // the store does not answer: the row stays as it is
		}
	}
}

func (a *App) sendRow(ctx context.Context, out *sse.Writer, ownerID, id string) error {
	v, err := a.d.Conversations.Get(ctx, ownerID, id)
	var b []byte
	switch {
	case errors.Is(err, conversation.ErrNotFound):
		b, _ = json.Marshal(streamMessage{Op: "gone", Target: "row-" + id})
	case err != nil:
		return err
	default:
		html, err := a.fragmentHTML("conv-row", newConvRow(v))
		if err != nil {
			return err
		}
		b, _ = json.Marshal(streamMessage{Op: "row", Target: "row-" + id, HTML: html})
	}
	return out.Event("", "", b)
}

func (a *App) statusFragment(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	v, err := a.d.Conversations.Get(r.Context(), s.User.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return a.fragment(w, r, "status", newStatusView(v))
}
