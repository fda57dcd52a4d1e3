package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Close codes of the event socket beside the standard ones.
const (
	closeAuthFailed websocket.StatusCode = 4001
	closeNotFound   websocket.StatusCode = 4004
)

// EventHeader is what the follower reads of every event.
type EventHeader struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Timestamp string `json:"timestamp"`
}

// FollowOptions tune FollowEvents; the zero value follows live events only.
type FollowOptions struct {
	// FromStart replays the conversation's whole log before the live events.
	FromStart bool
	// After, when it has a timestamp, starts with the events from that event's timestamp on
	// (not the event itself): what a client that has read the log up to it needs.
	After EventHeader
	// ReconnectFor bounds how long the follower keeps trying to connect again after losing
	// the socket (a server restart); 0 means two minutes.
	ReconnectFor time.Duration
	// PingEvery is how often the follower checks that the server still answers; 0 means 20 s.
	PingEvery time.Duration
}

// FollowEvents reads a conversation's events from its event socket and calls fn with each,
// in log order, until fn reports done, fn fails, or ctx ends. The socket begins each
// connection with a ConversationStateUpdateEvent whose key is full_state (the conversation as
// it is, not an event of its log); fn gets it too. A socket that drops (a server restart, a
// slow reader cut off) is opened again, asking for the events from the last one's timestamp
// on; those seen already are skipped by id, so none is lost or given twice.
func (c *Client) FollowEvents(ctx context.Context, sandboxID, convID string, o FollowOptions, fn func(raw json.RawMessage, h EventHeader) (done bool, err error)) error {
	if o.ReconnectFor <= 0 {
		o.ReconnectFor = 2 * time.Minute
	}
	if o.PingEvery <= 0 {
		o.PingEvery = 20 * time.Second
	}
	seen := map[string]bool{}
	last := o.After.Timestamp // timestamp of the last log event seen
	if o.After.ID != "" {
		seen[o.After.ID] = true
	}
	var failingSince time.Time
	delay := 100 * time.Millisecond
	for {
		q := url.Values{}
		switch {
		case last != "":
			q.Set("resend_mode", "since")
			q.Set("after_timestamp", last)
		case o.FromStart:
			q.Set("resend_mode", "all")
		}
		got, done, err := c.followOnce(ctx, sandboxID, convID, q, o.PingEvery, func(raw json.RawMessage, h EventHeader) (bool, error) {
			if h.ID != "" && seen[h.ID] {
				return false, nil
			}
			if h.ID != "" && !isFullState(raw, h) {
				seen[h.ID] = true
				last = h.Timestamp
			}
			return fn(raw, h)
		})
		if done || ctx.Err() != nil {
			if err == nil {
				err = ctx.Err()
			}
			return err
		}
		var final *Error
		if errors.As(err, &final) {
			return err
		}
		if got {
			failingSince, delay = time.Time{}, 100*time.Millisecond
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if time.Since(failingSince) > o.ReconnectFor {
			return fmt.Errorf("follow the events of conversation %s: %w", convID, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func isFullState(raw json.RawMessage, h EventHeader) bool {
	if h.Kind != "ConversationStateUpdateEvent" {
		return false
	}
	var su struct {
		Key string `json:"key"`
	}
	return json.Unmarshal(raw, &su) == nil && su.Key == "full_state"
}

// followOnce reads one connection of the socket. got says whether it connected; an *Error
// is final (refused, not found), any other error may pass with a new connection.
func (c *Client) followOnce(ctx context.Context, sandboxID, convID string, q url.Values, pingEvery time.Duration,
	fn func(json.RawMessage, EventHeader) (bool, error)) (got, done bool, err error) {
	path := "/agent-server/" + url.PathEscape(sandboxID) + "/sockets/events/" + url.PathEscape(convID)
	u := c.url(path, q)
	u = "ws" + strings.TrimPrefix(u, "http")
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+c.key)
	hdr.Set("User-Agent", c.userAgent)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPHeader: hdr})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode/100 == 4 {
			status := resp.StatusCode
			if status == http.StatusForbidden {
				status = http.StatusUnauthorized // the socket's word for a key it refused
			}
			return false, false, &Error{Method: "GET", Path: path, Status: status, Detail: "the event socket refused the connection"}
		}
		return false, false, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	stopPing := make(chan struct{})
	defer close(stopPing)
	go func() {
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
			}
			pctx, cancel := context.WithTimeout(ctx, pingEvery)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				conn.CloseNow()
				return
			}
		}
	}()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			switch websocket.CloseStatus(err) {
			case closeNotFound:
				return true, false, &Error{Method: "GET", Path: path, Status: http.StatusNotFound, Detail: "conversation not found (deleted?)"}
			case closeAuthFailed:
				return true, false, &Error{Method: "GET", Path: path, Status: http.StatusUnauthorized, Detail: "authentication failed"}
			}
			return true, false, err
		}
		if typ != websocket.MessageText {
			continue
		}
		var h EventHeader
		if json.Unmarshal(data, &h) != nil {
			continue
		}
		done, err := fn(json.RawMessage(data), h)
		if err != nil || done {
			conn.Close(websocket.StatusNormalClosure, "")
			return true, true, err
		}
	}
}
