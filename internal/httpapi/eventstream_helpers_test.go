package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// streamWait bounds every wait of the stream tests on a stream: far beyond what a busy
// machine needs, there only so that a broken stream fails the test instead of hanging it.
const streamWait = time.Minute

// sseEvent is one event of an SSE stream as the client parsed it, or a comment.
type sseEvent struct {
	id, name string
	hasID    bool
	data     []byte
	comment  string
	isNote   bool // a comment line
}

// sseClient is a client's end of an event stream.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	events chan sseEvent
	err    error // why events closed; read after it is
}

// streamPath is the event stream of a conversation.
func streamPath(convID, query string) string {
	p := "/api/v1/app-conversations/" + convID + "/events/stream"
	if query != "" {
		p += "?" + query
	}
	return p
}

// streamRequest sends the request for a conversation's event stream.
func (e *env) streamRequest(client *http.Client, key, convID, query string, header http.Header) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+streamPath(convID, query), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if key != "" {
		req.Header.Set("X-Session-API-Key", key)
	}
	if client == nil {
		client = e.srv.Client()
	}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("open stream: %v", err)
	}
	return resp
}

// openStream opens a stream, which must be answered 200 with an event stream.
func (e *env) openStream(key, convID, query string, header http.Header) *sseClient {
	e.t.Helper()
	return e.openStreamWith(nil, key, convID, query, header)
}

func (e *env) openStreamWith(client *http.Client, key, convID, query string, header http.Header) *sseClient {
	e.t.Helper()
	resp := e.streamRequest(client, key, convID, query, header)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("open stream: %s %q: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	s := &sseClient{t: e.t, resp: resp, events: make(chan sseEvent)}
	e.t.Cleanup(func() { resp.Body.Close() })
	return s
}

// start reads the stream in the background; until it is called, the client reads nothing
// (beyond what its connection buffers).
func (s *sseClient) start() *sseClient {
	go s.read()
	return s
}

// streamRefused opens a stream that must be refused with status; it returns the body.
func (e *env) streamRefused(key, convID, query string, header http.Header, status int) []byte {
	e.t.Helper()
	resp := e.streamRequest(nil, key, convID, query, header)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		e.t.Fatalf("stream %s: %s %s, want %d", streamPath(convID, query), resp.Status, body, status)
	}
	return body
}

// read parses the stream as the SSE specification says, until it ends.
func (s *sseClient) read() {
	defer close(s.events)
	r := bufio.NewReaderSize(s.resp.Body, 64<<10)
	var ev sseEvent
	var data [][]byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			s.err = err
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data != nil || ev.hasID || ev.name != "" {
				ev.data = bytes.Join(data, []byte("\n"))
				s.events <- ev
			}
			ev, data = sseEvent{}, nil
		case line[0] == ':':
			s.events <- sseEvent{isNote: true, comment: strings.TrimSpace(string(line[1:]))}
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "id":
				ev.id, ev.hasID = string(value), true
			case "event":
				ev.name = string(value)
			case "data":
				data = append(data, bytes.Clone(value))
			case "retry":
			default:
				s.t.Errorf("unknown SSE field in %q", line)
			}
		}
	}
}

// nextAny returns the next event or comment; ok is false once the stream has ended.
func (s *sseClient) nextAny() (sseEvent, bool) {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(streamWait):
		s.t.Fatalf("nothing on the stream for %v", streamWait)
		return sseEvent{}, false
	}
}

// next returns the next event, skipping comments; the stream must not end.
func (s *sseClient) next() sseEvent {
	s.t.Helper()
	for {
		ev, ok := s.nextAny()
		if !ok {
			s.t.Fatalf("the stream ended (%v)", s.err)
		}
		if !ev.isNote {
			return ev
		}
	}
}

// wire decodes an event's data.
func (ev sseEvent) wire(t *testing.T) wireEvent {
	t.Helper()
	var w wireEvent
	if err := json.Unmarshal(ev.data, &w); err != nil {
		t.Fatalf("event data %q: %v", ev.data, err)
	}
	return w
}

// fullState reads the first event, which must be the full state, without an SSE id.
func (s *sseClient) fullState() map[string]any {
	s.t.Helper()
	ev := s.next()
	w := ev.wire(s.t)
	if ev.hasID || ev.name != "" || w.Kind != "ConversationStateUpdateEvent" || w.Key != "full_state" {
		s.t.Fatalf("first event %+v (%s), want the full state without an id", ev, ev.data)
	}
	var state map[string]any
	if err := json.Unmarshal(w.Value, &state); err != nil {
		s.t.Fatal(err)
	}
	return state
}

// logEvent reads the next event, which must be a stored one: its SSE id is its id.
func (s *sseClient) logEvent() (wireEvent, []byte) {
	s.t.Helper()
	ev := s.next()
	w := ev.wire(s.t)
	if !ev.hasID || ev.id != w.ID || ev.name != "" {
		s.t.Fatalf("event %s: SSE id %q (set %v), name %q; want its own id", ev.data, ev.id, ev.hasID, ev.name)
	}
	return w, ev.data
}

// until reads stored events up to and including the first one for which stop holds.
func (s *sseClient) until(stop func(wireEvent) bool) (evs []wireEvent, raw [][]byte) {
	s.t.Helper()
	for {
		w, data := s.logEvent()
		evs, raw = append(evs, w), append(raw, data)
		if stop(w) {
			return evs, raw
		}
	}
}

// closeEvent is the data of a close event.
type closeEvent struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// rest reads the stream to its end: the stored events (ids and bytes), and the close event
// it ended with (zero if none).
func (s *sseClient) rest() (ids []string, raw [][]byte, closed closeEvent) {
	s.t.Helper()
	for {
		ev, ok := s.nextAny()
		switch {
		case !ok:
			if s.err != nil {
				s.t.Fatalf("the stream broke: %v", s.err)
			}
			return ids, raw, closed
		case ev.isNote:
		case ev.name == "close":
			if err := json.Unmarshal(ev.data, &closed); err != nil || closed.Reason == "" {
				s.t.Fatalf("close event %q: %v", ev.data, err)
			}
		case closed.Reason != "":
			s.t.Fatalf("event %s after the close event", ev.data)
		case ev.hasID:
			ids, raw = append(ids, ev.id), append(raw, ev.data)
		}
	}
}

// smallBufferClient is an HTTP client whose connections take little before the server must
// wait: a client that stops reading stalls its stream soon.
func smallBufferClient() *http.Client {
	d := &net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

// waitFollowers waits until the conversation has n live readers.
func (e *env) waitFollowers(convID string, n int) {
	e.t.Helper()
	e.eventually("the conversation's streams", func() bool { return e.app.Conversations.Followers(convID) == n },
		func() string { return fmt.Sprint("they are ", e.app.Conversations.Followers(convID), ", want ", n) })
}

// ctxWait is a context bounded by streamWait.
func ctxWait(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	t.Cleanup(cancel)
	return ctx
}
