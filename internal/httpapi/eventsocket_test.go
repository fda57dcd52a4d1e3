package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// socketWait bounds every wait of these tests on a socket.
const socketWait = 20 * time.Second

// socketURL is the conversation's event socket on the test server, with a query.
func (c *agentConv) socketURL(query string) string {
	p := strings.Replace(c.path(""), "/api/conversations/", "/sockets/events/", 1)
	u := "ws" + strings.TrimPrefix(c.e.srv.URL, "http") + p
	if query != "" {
		u += "?" + query
	}
	return u
}

// testSocket is a client's end of an event socket.
type testSocket struct {
	t *testing.T
	c *websocket.Conn
	// states are the full states the server sent after the first, which next sets aside
	// (they are not in the log): the execution status of each.
	states []string
}

// dialSocket opens a socket; the handshake must succeed.
func dialSocket(t *testing.T, u string, header http.Header) *testSocket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), socketWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	c.SetReadLimit(8 << 20) // the system prompt event is large
	t.Cleanup(func() { c.CloseNow() })
	return &testSocket{t: t, c: c}
}

// wantRefused dials a socket whose handshake must be refused with status.
func wantRefused(t *testing.T, u string, header http.Header, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), socketWait)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		c.CloseNow()
		t.Fatalf("dial %s: the socket opened, want %d before the upgrade", u, status)
	}
	if resp == nil || resp.StatusCode != status {
		t.Fatalf("dial %s: %v (answer %+v), want %d", u, err, resp, status)
	}
}

// keyHeader sends key as X-Session-API-Key.
func keyHeader(key string) http.Header { return http.Header{"X-Session-API-Key": {key}} }

// read returns the next frame, or the error that ended the socket.
func (s *testSocket) read() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), socketWait)
	defer cancel()
	_, data, err := s.c.Read(ctx)
	return data, err
}

// next returns the next frame that is an event of the log, and its bytes; full states on
// the way are kept in s.states.
func (s *testSocket) next() (wireEvent, []byte) {
	s.t.Helper()
	for {
		ev, data := s.frame()
		if ev.Key != "full_state" {
			return ev, data
		}
		var state struct {
			ExecutionStatus string `json:"execution_status"`
		}
		if err := json.Unmarshal(ev.Value, &state); err != nil || state.ExecutionStatus == "" {
			s.t.Fatalf("full state %s: %v", ev.Value, err)
		}
		s.states = append(s.states, state.ExecutionStatus)
	}
}

// frame returns the next frame as an event and its bytes.
func (s *testSocket) frame() (wireEvent, []byte) {
	s.t.Helper()
	data, err := s.read()
	if err != nil {
		s.t.Fatalf("reading the socket: %v", err)
	}
	var ev wireEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		s.t.Fatalf("frame %s: %v", data, err)
	}
	return ev, data
}

// fullState reads the first frame, which must be the full state.
func (s *testSocket) fullState() map[string]any {
	s.t.Helper()
	ev, _ := s.frame()
	if ev.Kind != "ConversationStateUpdateEvent" || ev.Key != "full_state" || ev.ID == "" || ev.Timestamp == "" {
		s.t.Fatalf("first frame %+v, want the full state", ev)
	}
	var state map[string]any
	if err := json.Unmarshal(ev.Value, &state); err != nil {
		s.t.Fatal(err)
	}
	return state
}

// until reads events up to and including the first one for which stop holds.
func (s *testSocket) until(stop func(wireEvent) bool) (evs []wireEvent, raw [][]byte) {
	s.t.Helper()
	for {
		ev, data := s.next()
		evs, raw = append(evs, ev), append(raw, data)
		if stop(ev) {
			return evs, raw
		}
	}
}

// closeStatus reads until the server closes the socket and returns the close code.
func (s *testSocket) closeStatus() websocket.StatusCode {
	s.t.Helper()
	for {
		data, err := s.read()
		if err != nil {
			return websocket.CloseStatus(err)
		}
		s.t.Logf("frame before the close: %s", data)
	}
}

func (s *testSocket) sendText(text string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), socketWait)
	defer cancel()
	if err := s.c.Write(ctx, websocket.MessageText, []byte(text)); err != nil {
		s.t.Fatalf("send: %v", err)
	}
}

func (s *testSocket) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	s.sendText(string(b))
}

// isStatus is a stop condition: the state update of execution_status to status.
func isStatus(status string) func(wireEvent) bool {
	return func(ev wireEvent) bool {
		return ev.Key == "execution_status" && string(ev.Value) == `"`+status+`"`
	}
}

// rawEvents reads the whole log through the REST API as the bytes of each event.
func (c *agentConv) rawEvents(query string) (ids []string, raw [][]byte) {
	c.e.t.Helper()
	page := ""
	for {
		var p struct {
			Items      []json.RawMessage `json:"items"`
			NextPageID *string           `json:"next_page_id"`
		}
		c.api("GET", "/events/search?limit=5&page_id="+url.QueryEscape(page)+query, nil, http.StatusOK, &p)
		for _, item := range p.Items {
			var ev wireEvent
			json.Unmarshal(item, &ev)
			ids, raw = append(ids, ev.ID), append(raw, item)
		}
		if p.NextPageID == nil {
			return ids, raw
		}
		page = *p.NextPageID
	}
}

func eventIDs(evs []wireEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}

// sameLog fails unless a socket delivered exactly the REST log: the same events, in order,
// each once, byte for byte.
func sameLog(t *testing.T, what string, gotIDs []string, gotRaw [][]byte, wantIDs []string, wantRaw [][]byte) {
	t.Helper()
	if !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("%s: events\n  %s\nwant the log\n  %s", what, strings.Join(gotIDs, "\n  "), strings.Join(wantIDs, "\n  "))
	}
	for i := range gotRaw {
		if !bytes.Equal(gotRaw[i], wantRaw[i]) {
			t.Fatalf("%s: frame %d\n  %s\nis not the stored event\n  %s", what, i, gotRaw[i], wantRaw[i])
		}
	}
}

// TestEventSocketAuth: the key in the query, in the header, or in the first frame opens the
// socket, whose first frame is the full state; a wrong key in the query or the header is
// refused before the upgrade (403); a wrong key in the first frame, a first frame that is no
// auth frame, or none in time closes it with 4001; an unknown conversation with 4004.
func TestEventSocketAuth(t *testing.T) {
	e := newEnv(t)
	// A first frame sent at once always beats this, however busy the machine.
	e.sockets.AuthTimeout = socketWait
	e.restart()
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true), "title": "socket auth"})
	c.waitStatus("finished")
	c2 := e.startAgent(alice, map[string]any{"initial_message": message("Another", false)})

	authFrame := func(key string) map[string]any { return map[string]any{"type": "auth", "session_api_key": key} }
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		first  any // a first frame to send, if any
		want   websocket.StatusCode
		// refused is the HTTP status of a handshake refused before the upgrade.
		refused int
	}{
		{name: "session key in the query", url: c.socketURL("session_api_key=" + url.QueryEscape(c.sessionKey))},
		{name: "owner's key in the header", url: c.socketURL(""), header: keyHeader(alice)},
		{name: "owner's key as a bearer token", url: c.socketURL(""), header: http.Header{"Authorization": {"Bearer " + alice}}},
		{name: "session key in the first frame", url: c.socketURL(""), first: authFrame(c.sessionKey)},
		{name: "query before header", url: c.socketURL("session_api_key=" + url.QueryEscape(c.sessionKey)), header: keyHeader("wrong")},
		{name: "wrong key in the query", url: c.socketURL("session_api_key=wrong"), refused: http.StatusForbidden},
		{name: "empty key in the query", url: c.socketURL("session_api_key="), refused: http.StatusForbidden},
		{name: "wrong key in the header", url: c.socketURL(""), header: keyHeader("wrong"), refused: http.StatusForbidden},
		{name: "wrong key in the first frame", url: c.socketURL(""), first: authFrame("wrong"), want: 4001},
		{name: "first frame is no auth frame", url: c.socketURL(""), first: message("hi", true), want: 4001},
		{name: "first frame is not JSON", url: c.socketURL(""), first: "hello", want: 4001},
		{name: "another user's key", url: c.socketURL(""), header: keyHeader(bob), want: 4004},
		{name: "the session key of another sandbox", url: c.socketURL(""), header: keyHeader(c2.sessionKey), refused: http.StatusForbidden},
		{name: "unknown conversation", url: strings.Replace(c.socketURL(""), c.id, "0123456789abcdef0123456789abcdef", 1), header: keyHeader(alice), want: 4004},
		{name: "unknown conversation, first-frame auth", url: strings.Replace(c.socketURL(""), c.id, "0123456789abcdef0123456789abcdef", 1), first: authFrame(c.sessionKey), want: 4004},
		{name: "malformed conversation id", url: strings.Replace(c.socketURL(""), c.id, "not..an-id", 1), header: keyHeader(alice), want: 4004},
		{name: "conversation of another sandbox", url: strings.Replace(c.socketURL(""), c.id, c2.id, 1), header: keyHeader(alice), want: 4004},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			if tc.refused != 0 {
				wantRefused(t, tc.url, tc.header, tc.refused)
				return
			}
			s := dialSocket(t, tc.url, tc.header)
			switch first := tc.first.(type) {
			case nil:
			case string:
				s.sendText(first)
			default:
				s.send(first)
			}
			if tc.want != 0 {
				if got := s.closeStatus(); got != tc.want {
					t.Fatalf("close status %d, want %d", got, tc.want)
				}
				return
			}
			state := s.fullState()
			wantID := c.info().ID
			if state["id"] != wantID || state["execution_status"] != "finished" || state["title"] != "socket auth" ||
				state["stats"] == nil || state["metrics"] == nil {
				t.Fatalf("full state %v", state)
			}
		})
	}

	// A client that never sends its auth frame is closed once AuthTimeout passes: short here,
	// since no frame ever comes, whatever the machine's speed.
	e.sockets.AuthTimeout = 300 * time.Millisecond
	e.restart()
	t.Run("no first frame in time", func(t *testing.T) {
		c := c.in(t)
		if got := dialSocket(t, c.socketURL(""), nil).closeStatus(); got != 4001 {
			t.Fatalf("close status %d, want 4001", got)
		}
	})
}

// TestEventSocketReplaysThenStreams: resend_mode=all sends the whole log, byte for byte and
// in order, then the events of a run started by a message sent on the socket, each once.
func TestEventSocketReplaysThenStreams(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("Hello there."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")

	s := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(c.sessionKey))
	s.fullState()
	wantIDs, wantRaw := c.rawEvents("")
	var gotIDs []string
	var gotRaw [][]byte
	for range wantIDs {
		ev, data := s.next()
		gotIDs, gotRaw = append(gotIDs, ev.ID), append(gotRaw, data)
	}
	sameLog(t, "replay", gotIDs, gotRaw, wantIDs, wantRaw)

	srv.Push(terminal(t, "echo live from the sandbox"),
		llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"message":"Ran it."}`)}}})
	s.send(message("Run echo", false)) // an SDK Message: run is implied
	live, liveRaw := s.until(isStatus("finished"))
	wantIDs, wantRaw = c.rawEvents("")
	sameLog(t, "replay and live", append(gotIDs, eventIDs(live)...), append(gotRaw, liveRaw...), wantIDs, wantRaw)
	wantLabels(t, live,
		"MessageEvent:user", "execution_status=idle", "execution_status=running",
		"ActionEvent:terminal", "ObservationEvent:terminal", "ActionEvent:finish", "ObservationEvent:finish",
		"execution_status=finished")
	// The whole state again right after each status other than running: once on the idle
	// of the message, and once at the end. Each shows the conversation as it is when it is
	// sent, so the first may already show the run that followed the idle.
	ev, _ := s.frame()
	if ev.Key != "full_state" || !strings.Contains(string(ev.Value), `"execution_status":"finished"`) {
		t.Fatalf("after the run: %+v, want the full state, finished", ev)
	}
	if len(s.states) != 1 || !slices.Contains([]string{"idle", "running", "finished"}, s.states[0]) {
		t.Fatalf("full states during the run: %v, want one (idle, or what followed it)", s.states)
	}
	for _, ev := range live {
		if ev.Kind == "ObservationEvent" && ev.ToolName == "terminal" && !strings.Contains(observationText(ev), "live from the sandbox") {
			t.Fatalf("terminal output %q", observationText(ev))
		}
	}
	var final struct {
		Response string `json:"response"`
	}
	c.api("GET", "/agent_final_response", nil, http.StatusOK, &final)
	if final.Response != "Ran it." {
		t.Fatalf("final response %q", final.Response)
	}
}

// TestEventSocketNoDuplicatesAcrossTheReplay: sockets opened with resend_mode=all while the
// agent appends events each deliver the log exactly once, whatever the moment they opened:
// an event stored while a socket reads the log reaches it by both ways, and is sent once.
func TestEventSocketNoDuplicatesAcrossTheReplay(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	const steps, sockets = 30, 30
	var script []llmtest.Step
	for i := range steps {
		script = append(script, terminal(t, fmt.Sprintf("echo step %d", i))) // distinct: no stuck pattern
	}
	script = append(script, llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"message":"All steps done."}`)}}})
	e.scripted(alice, script...)
	c := e.startAgent(alice, map[string]any{"initial_message": message("Echo thirty times", true)})

	// The sockets open one after the other while the agent runs.
	var opened []*testSocket
	for range sockets {
		opened = append(opened, dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice)))
	}
	c.waitStatus("finished")
	wantIDs, wantRaw := c.rawEvents("")
	for i, s := range opened {
		s.fullState()
		evs, raw := s.until(isStatus("finished"))
		sameLog(t, fmt.Sprintf("socket %d", i), eventIDs(evs), raw, wantIDs, wantRaw)
	}
}

// TestEventSocketResend: resend_mode=since replays the events from after_timestamp on;
// resend_all=true (deprecated) the whole log; without either, only live events come.
func TestEventSocketResend(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	_, raw := c.rawEvents("")
	var mid wireEvent
	json.Unmarshal(raw[len(raw)/2], &mid)
	sinceMid := "&timestamp__gte=" + url.QueryEscape(mid.Timestamp)
	if since, _ := c.rawEvents(sinceMid); len(since) == 0 || len(since) == len(raw) {
		t.Fatalf("bad test: %d of %d events from %s on", len(since), len(raw), mid.Timestamp)
	}

	for _, tc := range []struct {
		name, query string
		want        string // the REST query of the events to replay; "-" for none
	}{
		{"since", "resend_mode=since&after_timestamp=" + url.QueryEscape(mid.Timestamp), sinceMid},
		{"since, with a zone", "resend_mode=since&after_timestamp=" + url.QueryEscape(mid.Timestamp+"+00:00"), sinceMid},
		{"resend_all", "resend_all=true", ""},
		{"live only", "", "-"},
		{"since without after_timestamp", "resend_mode=since", "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.in(t)
			var want []string
			if tc.want != "-" {
				want, _ = c.rawEvents(tc.want)
			}
			s := dialSocket(t, c.socketURL(tc.query), keyHeader(alice))
			s.fullState()
			var got []string
			for range want {
				ev, _ := s.next()
				got = append(got, ev.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("replayed %v, want %v", got, want)
			}
			// What comes next is live: a message sent now.
			c.api("POST", "/events", message("Now: "+tc.name, false), http.StatusOK, nil)
			ev, _ := s.next()
			if ev.Kind != "MessageEvent" || len(ev.LLMMessage.Content) != 1 || ev.LLMMessage.Content[0].Text != "Now: "+tc.name {
				t.Fatalf("after the replay %+v, want the new message", ev)
			}
		})
	}

	t.Run("after_event_id", func(t *testing.T) {
		c := c.in(t)
		ids, _ := c.rawEvents("")
		s := dialSocket(t, c.socketURL("after_event_id="+ids[0]), keyHeader(alice))
		s.fullState()
		for _, id := range ids[1:] {
			if ev, _ := s.next(); ev.ID != id {
				t.Fatalf("after the first event came %s, want %s", ev.ID, id)
			}
		}
		// With resend_mode too: a 422 before the upgrade.
		ctx, cancel := context.WithTimeout(context.Background(), socketWait)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, c.socketURL("after_event_id="+ids[0]+"&resend_mode=all"), &websocket.DialOptions{HTTPHeader: keyHeader(alice)})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("dial with after_event_id and resend_mode: %v, %v; want a 422", resp, err)
		}
		// An id that is no event of the conversation closes the socket with 4400.
		if got := dialSocket(t, c.socketURL("after_event_id=no-such-event"), keyHeader(alice)).closeStatus(); got != 4400 {
			t.Fatalf("unknown after_event_id: closed with %d, want 4400", got)
		}
	})

	t.Run("unknown resend_mode", func(t *testing.T) {
		c := c.in(t)
		ctx, cancel := context.WithTimeout(context.Background(), socketWait)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, c.socketURL("resend_mode=some"), &websocket.DialOptions{HTTPHeader: keyHeader(alice)})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("dial with resend_mode=some: %v, %v; want a 422", resp, err)
		}
	})
}

// TestEventSocketClientFrames: frames that are no user message get a ServerErrorEvent and
// the socket stays open; a redundant auth frame is ignored; a message is answered.
func TestEventSocketClientFrames(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	s := dialSocket(t, c.socketURL(""), nil)
	s.send(map[string]any{"type": "auth", "session_api_key": c.sessionKey})
	s.fullState()

	for _, tc := range []struct {
		name, frame, code, detail string
	}{
		{"not JSON", "hello", "JSONDecodeError", "JSON"},
		{"no role", `{"content": [{"type": "text", "text": "hi"}]}`, "ValidationError", "role: Field required"},
		{"bad content", `{"role": "user", "content": [{"type": "video"}]}`, "ValidationError", "content.0.type"},
		{"not the user's", `{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}`, "ValueError", "role user"},
		{"a list", `[1, 2]`, "ValidationError", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.sendText(tc.frame)
			ev, _ := s.next()
			if ev.Kind != "ServerErrorEvent" || ev.Source != "environment" || ev.Code != tc.code ||
				!strings.Contains(ev.Detail, tc.detail) || ev.ID == "" {
				t.Fatalf("answer %+v, want a ServerErrorEvent %s about %q", ev, tc.code, tc.detail)
			}
		})
	}
	t.Run("binary frame", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), socketWait)
		defer cancel()
		if err := s.c.Write(ctx, websocket.MessageBinary, []byte(`{"role": "user", "content": []}`)); err != nil {
			t.Fatal(err)
		}
		if ev, _ := s.next(); ev.Kind != "ServerErrorEvent" || ev.Code != "ValueError" {
			t.Fatalf("answer %+v", ev)
		}
	})

	// Still open: an auth frame again is ignored, and a message is answered by the agent
	// (the server's default model says "OK.").
	s.send(map[string]any{"type": "auth", "session_api_key": "anything"})
	s.send(message("Are you there?", true))
	evs, _ := s.until(isStatus("finished"))
	wantLabels(t, evs, "MessageEvent:user", "execution_status=idle", "execution_status=running", "MessageEvent:agent", "execution_status=finished")
	for _, ev := range evs {
		if ev.Kind == "MessageEvent" && (ev.Source == "user" && ev.LLMMessage.Content[0].Text != "Are you there?" ||
			ev.Source == "agent" && ev.LLMMessage.Content[0].Text != "OK.") {
			t.Fatalf("message %+v", ev)
		}
	}
}

// TestEventSocketSubscriberLimit: a conversation takes as many sockets as configured; one
// more is closed with 1013 until one of them leaves.
func TestEventSocketSubscriberLimit(t *testing.T) {
	e := newEnv(t)
	const limit = 3
	e.sockets.MaxPerConversation = limit
	e.restart()
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	var open []*testSocket
	for range limit {
		s := dialSocket(t, c.socketURL(""), keyHeader(alice))
		s.fullState()
		open = append(open, s)
	}
	if got := dialSocket(t, c.socketURL(""), keyHeader(alice)).closeStatus(); got != websocket.StatusTryAgainLater {
		t.Fatalf("socket over the limit closed with %d, want 1013", got)
	}
	// Another conversation has room.
	c2 := e.startAgent(alice, map[string]any{"initial_message": message("Other", false)})
	dialSocket(t, c2.socketURL(""), keyHeader(alice)).fullState()

	open[0].c.Close(websocket.StatusNormalClosure, "")
	e.waitSocketPlace("a place among the sockets", c.socketURL(""), keyHeader(alice))
}

// TestEventSocketWriteTimeout: a socket whose peer stops reading, with fewer events waiting
// than its buffer holds (so it never falls behind), is cut off once a frame has waited the
// write timeout: its place among the conversation's sockets is free again. Neither a ping
// (an hour apart) nor falling behind would free it.
func TestEventSocketWriteTimeout(t *testing.T) {
	e := newEnv(t)
	e.sockets.MaxPerConversation = 1
	e.sockets.WriteTimeout = 100 * time.Millisecond
	e.sockets.PingInterval = time.Hour
	e.restart()
	e.sendBuffer.Store(16 << 10)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	stalled, _, err := websocket.Dial(ctxWait(t), c.socketURL(""),
		&websocket.DialOptions{HTTPClient: smallBufferClient(), HTTPHeader: keyHeader(alice)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.CloseNow() })
	e.waitFollowers(c.id, 1)
	// 40 events of 8 KiB: far more than the connection's buffers take, far fewer than the
	// stream's (256 events).
	big := strings.Repeat("x", 8<<10)
	for n := range 40 {
		c.api("POST", "/events", message(fmt.Sprintf("message %d: %s", n, big), false), http.StatusOK, nil)
	}
	e.waitSocketPlace("the stalled socket's place", c.socketURL(""), keyHeader(alice))
}

// waitSocketPlace waits until a socket dialled to u is let in (its first frame is the full
// state), not refused for want of a place (1013).
func (e *env) waitSocketPlace(what, u string, header http.Header) {
	e.t.Helper()
	e.eventually(what, func() bool {
		s := dialSocket(e.t, u, header)
		defer s.c.CloseNow()
		data, err := s.read()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
				e.t.Fatalf("socket closed with %v", err)
			}
			return false
		}
		var ev wireEvent
		json.Unmarshal(data, &ev)
		return ev.Key == "full_state"
	})
}

// TestEventSocketsCloseWithTheApp: closing the app closes its sockets (1001), also one
// still waiting for its auth frame, and waits for them.
func TestEventSocketsCloseWithTheApp(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	streaming := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice))
	streaming.fullState()
	waiting := dialSocket(t, c.socketURL(""), nil)

	statuses := make(chan websocket.StatusCode, 2)
	for _, s := range []*testSocket{streaming, waiting} {
		go func() {
			for {
				_, _, err := s.c.Read(context.Background())
				if err != nil {
					statuses <- websocket.CloseStatus(err)
					return
				}
			}
		}()
	}
	// Closing returns once the sockets are closed; it does not wait for their clients.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		e.stop()
	}()
	select {
	case <-stopped:
	case <-time.After(socketWait):
		t.Fatal("closing the app did not return with its sockets open")
	}
	for range 2 {
		select {
		case got := <-statuses:
			if got != websocket.StatusGoingAway {
				t.Fatalf("socket closed with %d, want 1001", got)
			}
		case <-time.After(socketWait):
			t.Fatal("a socket stayed open after the app closed")
		}
	}
}

// TestEventSocketClosesWhenTheConversationIsDeleted: a deleted conversation has no more
// events; its open sockets close with 4004, as a new one to it would.
func TestEventSocketClosesWhenTheConversationIsDeleted(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true)})
	c.waitStatus("finished")
	streaming := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice))
	streaming.fullState()
	streaming.until(isStatus("finished"))
	e.must("DELETE", "/api/conversations/"+c.id, alice, nil, http.StatusOK, nil)
	if got := streaming.closeStatus(); got != 4004 {
		t.Fatalf("socket of a deleted conversation closed with %d, want 4004", got)
	}
}

// TestAgentFinalResponse: the last finish message or agent message, whichever is later.
func TestAgentFinalResponse(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	srv := e.scripted(alice, llmtest.Text("A plain answer."))
	c := e.startAgent(alice, map[string]any{"title": "final"})
	final := func() string {
		var r struct {
			Response *string `json:"response"`
		}
		c.api("GET", "/agent_final_response", nil, http.StatusOK, &r)
		if r.Response == nil {
			t.Fatal("no response field")
		}
		return *r.Response
	}
	if got := final(); got != "" {
		t.Fatalf("before any answer: %q", got)
	}
	c.api("POST", "/events", message("First", true), http.StatusOK, nil)
	c.waitStatus("finished")
	if got := final(); got != "A plain answer." {
		t.Fatalf("after a message: %q", got)
	}
	srv.Push(llmtest.Step{Reply: &llmtest.Reply{Text: "Finishing.", ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"message":"The work is done."}`)}}})
	c.api("POST", "/events", message("Finish it", true), http.StatusOK, nil)
	e.eventually("the finish", func() bool { return final() == "The work is done." })
	c.waitStatus("finished")

	status, _ := e.call("GET", strings.Replace(c.path("/agent_final_response"), c.id, "0123456789abcdef0123456789abcdef", 1), c.sessionKey, nil)
	if status != http.StatusNotFound {
		t.Fatalf("unknown conversation: %d", status)
	}
}

// TestAgentEventsBodyFilter: body keeps the messages whose text contains it, ignoring case,
// in searches and counts, with the other filters.
func TestAgentEventsBodyFilter(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "echo the build"), llmtest.Text("I fixed THE BUILD."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("Please fix the build", true)})
	c.waitStatus("finished")

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"body=build", []string{"MessageEvent:user", "MessageEvent:agent"}},
		{"body=FIX+THE", []string{"MessageEvent:user"}},
		{"body=build&source=agent", []string{"MessageEvent:agent"}},
		{"body=build&kind=ActionEvent", nil},
		{"body=nowhere", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			c := c.in(t)
			var page struct {
				Items []wireEvent `json:"items"`
			}
			c.api("GET", "/events/search?"+tc.query, nil, http.StatusOK, &page)
			if got := labels(page.Items); !slices.Equal(got, tc.want) {
				t.Fatalf("found %v, want %v", got, tc.want)
			}
			var n int
			c.api("GET", "/events/count?"+tc.query, nil, http.StatusOK, &n)
			if n != len(tc.want) {
				t.Fatalf("counted %d, want %d", n, len(tc.want))
			}
		})
	}
}
