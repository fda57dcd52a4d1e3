package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// TestEventStream: the SSE stream opens with the full state, replays the log byte for byte
// with each event's id as its SSE id, goes on with the live events, keeps an idle stream
// open with comments, and starts after the event a client names (Last-Event-ID before
// after_event_id). What it cannot serve is refused with a detail.
func TestEventStream(t *testing.T) {
	e := newEnv(t)
	e.sockets.PingInterval = 50 * time.Millisecond // heartbeats come soon
	e.restart()
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	srv := e.scripted(alice, llmtest.Text("Hello there."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hello", true), "title": "streamed"})
	c.waitStatus("finished")
	wantIDs, wantRaw := c.rawEvents("")

	s := e.openStream(alice, c.id, "", nil).start()
	state := s.fullState()
	if state["title"] != "streamed" || state["execution_status"] != "finished" || state["sandbox_status"] != "RUNNING" ||
		state["conversation_status"] != "RUNNING" || state["sandbox_id"] != c.sandboxID || state["stats"] == nil {
		t.Fatalf("full state %v", state)
	}
	if task, _ := state["start_task"].(map[string]any); task["status"] != "READY" || task["app_conversation_id"] != c.id {
		t.Fatalf("full state's start task %v", state["start_task"])
	}
	var gotIDs []string
	var gotRaw [][]byte
	for range wantIDs {
		w, data := s.logEvent()
		gotIDs, gotRaw = append(gotIDs, w.ID), append(gotRaw, data)
	}
	sameLog(t, "replay", gotIDs, gotRaw, wantIDs, wantRaw)

	t.Run("heartbeat", func(t *testing.T) {
		// Nothing happens in the conversation: a comment keeps the stream open.
		if ev, ok := s.nextAny(); !ok || !ev.isNote {
			t.Fatalf("an idle stream sent %+v (open %v), want a comment", ev, ok)
		}
	})

	srv.Push(terminal(t, "echo live from the sandbox"),
		llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"message":"Ran it."}`)}}})
	e.must("POST", "/api/v1/app-conversations/"+c.id+"/send-message", alice, map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": "Run echo"}}}, http.StatusOK, nil)
	live, liveRaw := s.until(isStatus("finished"))
	wantIDs, wantRaw = c.rawEvents("")
	sameLog(t, "replay and live", append(gotIDs, eventIDs(live)...), append(gotRaw, liveRaw...), wantIDs, wantRaw)
	wantLabels(t, live, "MessageEvent:user", "execution_status=idle", "execution_status=running",
		"ActionEvent:terminal", "ObservationEvent:terminal", "ActionEvent:finish", "ObservationEvent:finish",
		"execution_status=finished")

	t.Run("after an event", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		mid := len(wantIDs) / 2
		for _, tc := range []struct {
			name, query string
			header      http.Header
		}{
			{"after_event_id", "after_event_id=" + wantIDs[mid], nil},
			{"Last-Event-ID", "", http.Header{"Last-Event-ID": {wantIDs[mid]}}},
			// An EventSource reconnects to the URL it opened, with Last-Event-ID: that wins.
			{"Last-Event-ID before after_event_id", "after_event_id=" + wantIDs[0], http.Header{"Last-Event-ID": {wantIDs[mid]}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := e.in(t)
				c := c.in(t)
				s := e.openStream(alice, c.id, tc.query, tc.header).start()
				s.fullState()
				var gotIDs []string
				var gotRaw [][]byte
				for range wantIDs[mid+1:] {
					w, data := s.logEvent()
					gotIDs, gotRaw = append(gotIDs, w.ID), append(gotRaw, data)
				}
				sameLog(t, tc.name, gotIDs, gotRaw, wantIDs[mid+1:], wantRaw[mid+1:])
			})
		}
		// After the last event: only what comes next.
		s := e.openStream(alice, c.id, "after_event_id="+wantIDs[len(wantIDs)-1], nil).start()
		s.fullState()
		c.api("POST", "/events", message("Not now", false), http.StatusOK, nil)
		if w, _ := s.logEvent(); w.Kind != "MessageEvent" || w.LLMMessage.Content[0].Text != "Not now" {
			t.Fatalf("after the last event came %+v, want the new message", w)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		e.streamRefused("", c.id, "", nil, http.StatusUnauthorized)
		if body := e.streamRefused(bob, c.id, "", nil, http.StatusNotFound); !strings.Contains(string(body), "Conversation not found") {
			t.Fatalf("another user's conversation: %s", body)
		}
		e.streamRefused(alice, "not-a-uuid", "", nil, http.StatusBadRequest)
		e.streamRefused(alice, id.Ordered(), "", nil, http.StatusNotFound)
		body := e.streamRefused(alice, c.id, "after_event_id=no-such-event", nil, http.StatusUnprocessableEntity)
		var v struct {
			Detail []struct {
				Loc []any  `json:"loc"`
				Msg string `json:"msg"`
			} `json:"detail"`
		}
		if json.Unmarshal(body, &v) != nil || len(v.Detail) != 1 || fmt.Sprint(v.Detail[0].Loc) != "[query after_event_id]" {
			t.Fatalf("unknown after_event_id: %s", body)
		}
		if body := e.streamRefused(alice, c.id, "", http.Header{"Last-Event-ID": {"no-such-event"}}, http.StatusBadRequest); !strings.Contains(string(body), "Last-Event-ID") {
			t.Fatalf("unknown Last-Event-ID: %s", body)
		}
		// An event of another of the caller's conversations is not one of this one's.
		other := e.startAgent(alice, map[string]any{})
		otherIDs, _ := other.rawEvents("")
		e.streamRefused(alice, c.id, "after_event_id="+otherIDs[0], nil, http.StatusUnprocessableEntity)
	})

	t.Run("deleted", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		s := e.openStream(alice, c.id, "after_event_id="+wantIDs[len(wantIDs)-1], nil).start()
		s.fullState()
		e.must("DELETE", "/api/v1/app-conversations/"+c.id, alice, nil, http.StatusOK, nil)
		if _, _, closed := s.rest(); closed.Reason != "deleted" {
			t.Fatalf("stream of a deleted conversation ended with %+v, want the close event deleted", closed)
		}
	})
}

// TestEventStreamStatus: a stream shows a conversation's start task step by step, its
// sandbox's status and the conversation status they imply, its agent's execution status and
// costs, so a page never polls; the agent works on with these in its log.
func TestEventStreamStatus(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "echo one"), llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
		llmtest.Text("Still here."))
	convID := strings.ReplaceAll(id.Ordered(), "-", "")
	var task v1Task
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{"conversation_id": convID,
		"initial_message": message("Go", true)}, http.StatusOK, &task)
	// The conversation is there from the start: its stream shows the start from its first step.
	s := e.openStream(alice, convID, "", nil).start()
	state := s.fullState()
	if state["conversation_status"] != "STARTING" && state["conversation_status"] != "RUNNING" {
		t.Fatalf("full state at the start %v", state)
	}
	evs, _ := s.until(isStatus("finished"))

	var steps, sandbox, status []string
	var agent []string
	for i, ev := range evs {
		switch ev.Key {
		case "start_task":
			var st struct {
				ID                string  `json:"id"`
				Status            string  `json:"status"`
				AppConversationID *string `json:"app_conversation_id"`
				SandboxID         *string `json:"sandbox_id"`
			}
			if err := json.Unmarshal(ev.Value, &st); err != nil || st.ID != task.ID || (st.Status == "READY") != (st.AppConversationID != nil) {
				t.Fatalf("start task update %s", ev.Value)
			}
			steps = append(steps, st.Status)
			if st.Status == "READY" {
				// READY says where the sandbox and the conversation are, at once.
				if len(evs) < i+3 || evs[i+1].label() != "sandbox_status=RUNNING" || evs[i+2].label() != "conversation_status=RUNNING" {
					t.Fatalf("READY followed by %v", labels(evs[i+1:min(i+3, len(evs))]))
				}
			}
		case "sandbox_status":
			sandbox = append(sandbox, ev.label())
		case "conversation_status":
			status = append(status, ev.label())
		case "stats":
			var stats struct {
				UsageToMetrics map[string]struct {
					AccumulatedCost *float64 `json:"accumulated_cost"`
				} `json:"usage_to_metrics"`
			}
			if json.Unmarshal(ev.Value, &stats) != nil || stats.UsageToMetrics["default"].AccumulatedCost == nil {
				t.Fatalf("stats %s", ev.Value)
			}
			agent = append(agent, "stats")
		default:
			agent = append(agent, ev.label())
		}
	}
	if want := []string{"WAITING_FOR_SANDBOX", "WAITING_FOR_SANDBOX", "SETTING_UP_SKILLS", "STARTING_CONVERSATION", "READY"}; !slices.Equal(steps, want) {
		t.Fatalf("start task steps %v, want %v", steps, want)
	}
	if status[0] != "conversation_status=STARTING" || status[len(status)-1] != "conversation_status=RUNNING" || sandbox[len(sandbox)-1] != "sandbox_status=RUNNING" {
		t.Fatalf("conversation statuses %v, sandbox statuses %v", status, sandbox)
	}
	if !slices.Contains(agent, "stats") || !slices.Contains(agent, "ObservationEvent:terminal") {
		t.Fatalf("the agent's events %v", agent)
	}

	// The sandbox's changes come as they happen.
	sandboxID := *e.waitTask(alice, task.ID, "READY").SandboxID
	e.must("POST", "/api/v1/sandboxes/"+sandboxID+"/pause", alice, nil, http.StatusOK, nil)
	if got, _ := s.until(func(ev wireEvent) bool { return ev.Key == "conversation_status" }); len(got) != 2 ||
		got[0].label() != "sandbox_status=PAUSED" || got[1].label() != "conversation_status=STOPPED" {
		t.Fatalf("pause: %v", labels(got))
	}
	e.must("POST", "/api/v1/sandboxes/"+sandboxID+"/resume", alice, nil, http.StatusOK, nil)
	if got, _ := s.until(func(ev wireEvent) bool { return ev.Key == "conversation_status" }); len(got) != 2 ||
		got[0].label() != "sandbox_status=RUNNING" || got[1].label() != "conversation_status=RUNNING" {
		t.Fatalf("resume: %v", labels(got))
	}
	// The agent reads its log, status updates and all, as before.
	e.must("POST", "/api/v1/app-conversations/"+convID+"/send-message", alice, map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": "Still there?"}}}, http.StatusOK, nil)
	got, _ := s.until(isStatus("finished"))
	wantLabels(t, got, "MessageEvent:user", "execution_status=idle", "execution_status=running", "MessageEvent:agent", "execution_status=finished")
}

// TestStreamsHundredSubscribers: a conversation takes 100 streams by default, event sockets
// and SSE streams together; one more of either kind is refused; each of the 100 receives
// every event of a run, in order, once.
func TestStreamsHundredSubscribers(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	const steps = 8
	var script []llmtest.Step
	for i := range steps {
		script = append(script, terminal(t, fmt.Sprintf("echo step %d", i))) // distinct: no stuck pattern
	}
	script = append(script, llmtest.Calls(llmtest.Call("finish", `{"message":"All steps done."}`)))
	e.scripted(alice, script...)
	// Without a message the agent records its system prompt and waits.
	c := e.startAgent(alice, map[string]any{})
	e.eventually("system prompt recorded", func() bool { return slices.Contains(labels(c.events()), "SystemPromptEvent") })
	c.waitStatus("idle")

	var sse []*sseClient
	var sockets []*testSocket
	for i := range 100 {
		if i%2 == 0 {
			s := e.openStream(alice, c.id, "", nil).start()
			s.fullState()
			sse = append(sse, s)
		} else {
			s := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice))
			s.fullState()
			sockets = append(sockets, s)
		}
	}
	e.streamRefused(alice, c.id, "", nil, http.StatusTooManyRequests)
	if got := dialSocket(t, c.socketURL(""), keyHeader(alice)).closeStatus(); got != websocket.StatusTryAgainLater {
		t.Fatalf("101st socket closed with %d, want 1013", got)
	}

	c.api("POST", "/events", message("Echo eight times", true), http.StatusOK, nil)
	c.waitStatus("finished")
	wantIDs, wantRaw := c.rawEvents("")
	for i, s := range sse {
		evs, raw := s.until(isStatus("finished"))
		sameLog(t, fmt.Sprintf("stream %d", i), eventIDs(evs), raw, wantIDs, wantRaw)
	}
	for i, s := range sockets {
		evs, raw := s.until(isStatus("finished"))
		sameLog(t, fmt.Sprintf("socket %d", i), eventIDs(evs), raw, wantIDs, wantRaw)
	}
}

// TestStreamStalledSubscriberIsCutOff: clients that stop reading fill their connections,
// then their buffers, and are cut off, while the clients that read and the agent carry on,
// never waiting for them. Once they read again they find a beginning of the log and the
// reason (SSE: the close event lagged; WebSocket: 1013), and resume after the last event
// they got: together they have the whole log, each event once.
func TestStreamStalledSubscriberIsCutOff(t *testing.T) {
	e := newEnv(t)
	// Room for 64 events: the clients that read never fall that far behind, however busy the
	// machine; the stalled ones fill their small connection buffers (below), then that.
	e.sockets.EventBuffer = 64
	// Only falling behind cuts the stalled clients off: no write timeout or unanswered ping
	// does during the test.
	e.sockets.WriteTimeout = 10 * time.Minute
	e.sockets.PingInterval = time.Hour
	e.restart()
	e.sendBuffer.Store(16 << 10)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "echo the agent carries on"), llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)))
	c := e.startAgent(alice, map[string]any{})
	e.eventually("system prompt recorded", func() bool { return slices.Contains(labels(c.events()), "SystemPromptEvent") })
	c.waitStatus("idle")

	// Two clients read everything as it comes, until the agent has finished.
	reader := e.openStream(alice, c.id, "", nil).start()
	reader.fullState()
	readerDone := make(chan struct{})
	var readerIDs []string
	var readerRaw [][]byte
	go func() {
		defer close(readerDone)
		for ev := range reader.events {
			if ev.hasID {
				readerIDs, readerRaw = append(readerIDs, ev.id), append(readerRaw, ev.data)
				if strings.Contains(string(ev.data), `"key":"execution_status","value":"finished"`) {
					return
				}
			}
		}
	}()
	readerSocket := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice))
	readerSocket.fullState()
	socketDone := make(chan struct{})
	var socketIDs []string
	var socketRaw [][]byte
	readCtx := ctxWait(t)
	go func() {
		defer close(socketDone)
		for {
			_, data, err := readerSocket.c.Read(readCtx)
			if err != nil {
				return
			}
			var w wireEvent
			json.Unmarshal(data, &w)
			if w.Key == "full_state" {
				continue
			}
			socketIDs, socketRaw = append(socketIDs, w.ID), append(socketRaw, data)
			if w.Key == "execution_status" && string(w.Value) == `"finished"` {
				return
			}
		}
	}()
	// Three clients stop reading at once, with small connection buffers; the third never reads
	// again.
	stalled := e.openStreamWith(smallBufferClient(), alice, c.id, "", nil) // not started
	e.openStreamWith(smallBufferClient(), alice, c.id, "", nil)
	stalledSocket, _, err := websocket.Dial(ctxWait(t), c.socketURL("resend_mode=all"),
		&websocket.DialOptions{HTTPClient: smallBufferClient(), HTTPHeader: keyHeader(alice)})
	if err != nil {
		t.Fatal(err)
	}
	stalledSocket.SetReadLimit(8 << 20)
	t.Cleanup(func() { stalledSocket.CloseNow() })
	e.waitFollowers(c.id, 5)

	// Messages until the stalled clients are cut off; appending never waits for them.
	big := strings.Repeat("x", 8<<10)
	for n := 0; e.app.Conversations.Followers(c.id) > 2; n++ {
		if n == 2000 {
			t.Fatalf("2000 messages of 8 KiB, and %d streams still follow", e.app.Conversations.Followers(c.id))
		}
		c.api("POST", "/events", message(fmt.Sprintf("message %d: %s", n, big), false), http.StatusOK, nil)
	}
	// The stalled clients' streams are still blocked on their connections; the agent runs.
	c.api("POST", "/events", message("Now run", true), http.StatusOK, nil)
	c.waitStatus("finished")
	wantIDs, wantRaw := c.rawEvents("")
	for _, done := range []chan struct{}{readerDone, socketDone} {
		select {
		case <-done:
		case <-time.After(streamWait):
			t.Fatal("a reading client did not get to the end of the run")
		}
	}
	sameLog(t, "the reading stream", readerIDs, readerRaw, wantIDs, wantRaw)
	sameLog(t, "the reading socket", socketIDs, socketRaw, wantIDs, wantRaw)

	t.Run("SSE", func(t *testing.T) {
		e := e.in(t)
		c := c.in(t)
		ids, raw, closed := stalled.start().rest()
		if closed.Reason != "lagged" || len(ids) == 0 || len(ids) >= len(wantIDs) {
			t.Fatalf("the stalled stream got %d of %d events and %+v; want a beginning and the close event lagged", len(ids), len(wantIDs), closed)
		}
		sameLog(t, "before the cut", ids, raw, wantIDs[:len(ids)], wantRaw[:len(ids)])
		resumed := e.openStream(alice, c.id, "", http.Header{"Last-Event-ID": {ids[len(ids)-1]}}).start()
		resumed.fullState()
		for range wantIDs[len(ids):] {
			w, data := resumed.logEvent()
			ids, raw = append(ids, w.ID), append(raw, data)
		}
		sameLog(t, "cut and resumed", ids, raw, wantIDs, wantRaw)
	})
	t.Run("WebSocket", func(t *testing.T) {
		c := c.in(t)
		var ids []string
		var raw [][]byte
		ctx := ctxWait(t)
		for {
			_, data, err := stalledSocket.Read(ctx)
			if err != nil {
				if got := websocket.CloseStatus(err); got != websocket.StatusTryAgainLater {
					t.Fatalf("the stalled socket closed with %v, want 1013", err)
				}
				break
			}
			var w wireEvent
			json.Unmarshal(data, &w)
			if w.Key != "full_state" {
				ids, raw = append(ids, w.ID), append(raw, data)
			}
		}
		if len(ids) == 0 || len(ids) >= len(wantIDs) {
			t.Fatalf("the stalled socket got %d of %d events", len(ids), len(wantIDs))
		}
		sameLog(t, "before the cut", ids, raw, wantIDs[:len(ids)], wantRaw[:len(ids)])
		resumed := dialSocket(t, c.socketURL("after_event_id="+ids[len(ids)-1]), keyHeader(alice))
		resumed.fullState()
		for range wantIDs[len(ids):] {
			w, data := resumed.next()
			ids, raw = append(ids, w.ID), append(raw, data)
		}
		sameLog(t, "cut and resumed", ids, raw, wantIDs, wantRaw)
	})
	t.Run("shutdown", func(t *testing.T) {
		e := e.in(t)
		// The third stream's write is still blocked on its client: stopping the server cuts it
		// rather than wait for the write timeout.
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			e.stop()
		}()
		select {
		case <-stopped:
		case <-time.After(streamWait):
			t.Fatal("the server did not stop while a stream's client took nothing")
		}
	})
}

// TestStreamsResumeAcrossRestart: clients that had read part of the log when the server
// stopped (SSE: the close event shutdown; WebSocket: 1001) resume after the last event they
// received from the restarted server, and get the rest of the log, including what happened
// after the restart, each event once.
func TestStreamsResumeAcrossRestart(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice, terminal(t, "echo before"), llmtest.Calls(llmtest.Call("finish", `{"message":"one"}`)),
		terminal(t, "echo after"), llmtest.Calls(llmtest.Call("finish", `{"message":"two"}`)))
	c := e.startAgent(alice, map[string]any{"initial_message": message("First", true)})
	c.waitStatus("finished")
	before, _ := c.rawEvents("")
	half := len(before) / 2

	s := e.openStream(alice, c.id, "", nil).start()
	s.fullState()
	var sseIDs []string
	var sseRaw [][]byte
	for range half {
		w, data := s.logEvent()
		sseIDs, sseRaw = append(sseIDs, w.ID), append(sseRaw, data)
	}
	ws := dialSocket(t, c.socketURL("resend_mode=all"), keyHeader(alice))
	ws.fullState()
	var wsIDs []string
	var wsRaw [][]byte
	for range half {
		w, data := ws.next()
		wsIDs, wsRaw = append(wsIDs, w.ID), append(wsRaw, data)
	}

	e.restart()
	if _, _, closed := s.rest(); closed.Reason != "shutdown" {
		t.Fatalf("the stream ended with %+v at the shutdown, want the close event shutdown", closed)
	}
	if got := ws.closeStatus(); got != websocket.StatusGoingAway {
		t.Fatalf("the socket closed with %d at the shutdown, want 1001", got)
	}
	// The conversation goes on after the restart.
	c.api("POST", "/events", message("Second", true), http.StatusOK, nil)
	c.waitStatus("finished")
	wantIDs, wantRaw := c.rawEvents("")

	s2 := e.openStream(alice, c.id, "", http.Header{"Last-Event-ID": {sseIDs[half-1]}}).start()
	s2.fullState()
	for range wantIDs[half:] {
		w, data := s2.logEvent()
		sseIDs, sseRaw = append(sseIDs, w.ID), append(sseRaw, data)
	}
	sameLog(t, "SSE across the restart", sseIDs, sseRaw, wantIDs, wantRaw)

	ws2 := dialSocket(t, c.socketURL("after_event_id="+wsIDs[half-1]), keyHeader(alice))
	ws2.fullState()
	for range wantIDs[half:] {
		w, data := ws2.next()
		wsIDs, wsRaw = append(wsIDs, w.ID), append(wsRaw, data)
	}
	sameLog(t, "WebSocket across the restart", wsIDs, wsRaw, wantIDs, wantRaw)
}
