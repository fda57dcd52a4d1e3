package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestNewWritesTheOpenHandsEnvelope(t *testing.T) {
	e, err := New("0d6f5c1e-7b3a-4c52-9a1d-2f0e8b7c6a51", t0, SourceAgent, &ActionEvent{
		Thought:  []TextPart{Text("list the files")},
		Action:   json.RawMessage(`{"kind":"TerminalAction","command":"ls"}`),
		ToolName: "terminal", ToolCallID: "call_1",
		ToolCall:      ToolCall{ID: "call_1", Name: "terminal", Arguments: `{"command":"ls"}`, Origin: "completion"},
		LLMResponseID: "resp-1", SecurityRisk: "UNKNOWN",
	})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(e.Body, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"kind": "ActionEvent", "id": "0d6f5c1e-7b3a-4c52-9a1d-2f0e8b7c6a51",
		"timestamp": "2025-03-01T12:00:00.123456", "source": "agent", "tool_name": "terminal",
		"tool_call_id": "call_1", "llm_response_id": "resp-1", "security_risk": "UNKNOWN", "summary": nil,
	} {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("%s = %#v, want %#v", k, got[k], want)
		}
	}
	if e.Kind != KindAction || e.Source != SourceAgent || !e.Timestamp.Equal(t0.Truncate(time.Microsecond)) {
		t.Errorf("envelope copies: %+v", e)
	}
	body, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := body.(*ActionEvent)
	if !ok || a.ToolCall.Arguments != `{"command":"ls"}` || string(a.Action) != `{"kind":"TerminalAction","command":"ls"}` {
		t.Fatalf("decoded %#v", body)
	}
}

func TestInvalidActionIsNull(t *testing.T) {
	e, err := New("id", t0, SourceAgent, &ActionEvent{ToolName: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	json.Unmarshal(e.Body, &got)
	if string(got["action"]) != "null" {
		t.Fatalf("action = %s, want null", got["action"])
	}
}

func TestMessageTextsAndImagesRoundTrip(t *testing.T) {
	e, err := NewUserMessage("id", t0, "look at this", []string{"https://example.com/a.png", "data:image/png;base64,AAAA"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	m := body.(*MessageEvent)
	if got := m.Texts(); !reflect.DeepEqual(got, []string{"look at this"}) {
		t.Errorf("texts %q", got)
	}
	if got := m.ImageURLs(); len(got) != 2 || got[1] != "data:image/png;base64,AAAA" {
		t.Errorf("images %q", got)
	}
}

// TestDecodedBodySharesTheEventsStrings: a decoded body holds its event's id, kind and
// source, not copies of them.
func TestDecodedBodySharesTheEventsStrings(t *testing.T) {
	e, err := New("0d6f5c1e-7b3a-4c52-9a1d-2f0e8b7c6a51", t0, SourceAgent, &AgentErrorEvent{ToolName: "terminal", ToolCallID: "call_1", Error: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	ae := b.(*AgentErrorEvent)
	for _, f := range []struct{ name, body, event string }{{"id", ae.ID, e.ID}, {"kind", ae.Kind, e.Kind}, {"source", ae.Source, e.Source}} {
		if f.body != f.event || unsafe.StringData(f.body) != unsafe.StringData(f.event) {
			t.Errorf("the body's %s %q is a copy of the event's %q", f.name, f.body, f.event)
		}
	}
}

func TestDecodeUnknownKind(t *testing.T) {
	b, err := Decode(Event{Kind: "HookExecutionEvent", Body: json.RawMessage(`{"kind":"HookExecutionEvent","id":"x","timestamp":"","source":"hook"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if b.base().ID != "x" || b.eventKind() != "HookExecutionEvent" {
		t.Fatalf("%#v", b)
	}
}

func TestBusDeliversInOrderAndDropsLaggards(t *testing.T) {
	var b LocalBus
	fast := b.subscribe("c1", 10)
	slow := b.subscribe("c1", 1)
	other := b.subscribe("c2", 10)
	b.Publish(Event{ID: "1", ConversationID: "c1"}, Event{ID: "2", ConversationID: "c1"})
	if e := <-fast.C; e.ID != "1" {
		t.Fatalf("first %q", e.ID)
	}
	if e := <-fast.C; e.ID != "2" {
		t.Fatalf("second %q", e.ID)
	}
	if e, ok := <-slow.C; !ok || e.ID != "1" {
		t.Fatalf("slow first %q %v", e.ID, ok)
	}
	if _, ok := <-slow.C; ok || !slow.Lagged() {
		t.Fatal("slow subscriber not dropped")
	}
	select {
	case e := <-other.C:
		t.Fatalf("other conversation got %q", e.ID)
	default:
	}
	fast.Close()
	fast.Close()
	if _, ok := <-fast.C; ok {
		t.Fatal("closed subscription delivers")
	}
	b.Publish(Event{ID: "3", ConversationID: "c1"}) // no subscribers left: no panic
	if st := b.Stats(); st != (BusStats{Subscribers: 1, Lagged: 1, Closed: 1}) {
		t.Fatalf("stats with one subscriber left: %+v", st)
	}
	other.Close()
	if len(b.subs) != 0 {
		t.Fatalf("subscriptions left: %v", b.subs)
	}
	if st := b.Stats(); st != (BusStats{Lagged: 1, Closed: 2}) {
		t.Fatalf("stats at the end: %+v", st)
	}
}

func TestBusEndClosesTheConversationsSubscriptions(t *testing.T) {
	var b LocalBus
	a1, a2 := b.subscribe("a", 10), b.subscribe("a", 10)
	other := b.subscribe("b", 10)
	b.Publish(Event{ID: "1", ConversationID: "a"})
	b.End("a")
	for _, s := range []*Subscription{a1, a2} {
		if e, ok := <-s.C; !ok || e.ID != "1" {
			t.Fatalf("event before the end: %q %v", e.ID, ok)
		}
		if _, ok := <-s.C; ok || !s.Ended() || s.Lagged() {
			t.Fatalf("subscription after the end: open %v, ended %v, lagged %v", ok, s.Ended(), s.Lagged())
		}
		s.Close() // still safe
	}
	b.End("a") // nothing left: no panic
	b.Publish(Event{ID: "2", ConversationID: "b"})
	if e := <-other.C; e.ID != "2" || other.Ended() {
		t.Fatalf("other conversation: %q, ended %v", e.ID, other.Ended())
	}
	other.Close()
	if len(b.subs) != 0 {
		t.Fatalf("subscriptions left: %v", b.subs)
	}
	if st := b.Stats(); st != (BusStats{Ended: 2, Closed: 1}) {
		t.Fatalf("stats: %+v", st)
	}
}

func TestBodyText(t *testing.T) {
	user, err := NewUserMessage("m1", t0, "Fix the build", []string{"https://example.com/a.png"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind, body, want string
	}{
		{"user message", KindMessage, string(user.Body), "Fix the build"},
		{"every text part, extended content and reasoning", KindMessage,
			`{"llm_message": {"role": "assistant", "content": [{"type": "text", "text": "one"}, {"type": "image", "image_urls": ["x"]}, {"type": "text", "text": "two"}],
			  "reasoning_content": "why"}, "extended_content": [{"type": "text", "text": "skill"}]}`, "one two skill why"},
		{"another kind", KindAction, `{"llm_message": {"content": [{"type": "text", "text": "no"}]}}`, ""},
		{"a body that does not decode", KindMessage, `{"llm_message": 3}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BodyText(tc.kind, []byte(tc.body)); got != tc.want {
				t.Fatalf("BodyText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBusRecordPublishesOnlyWhatWasStored(t *testing.T) {
	var b LocalBus
	sub := b.subscribe("c1", 10)
	defer sub.Close()
	evs := []Event{{ID: "1", ConversationID: "c1"}, {ID: "2", ConversationID: "c1"}}
	if err := b.Record("c1", func() error { return errors.New("disk full") }, evs); err == nil {
		t.Fatal("a failed store recorded")
	}
	// A store that does not number the events is a bug: they are not published, since a
	// feed would take them for transient ones.
	if err := b.Record("c1", func() error { return nil }, evs); err == nil {
		t.Fatal("events without a seq recorded")
	}
	select {
	case e := <-sub.C:
		t.Fatalf("published %q", e.ID)
	default:
	}
	if err := b.Record("c1", func() error {
		for i := range evs {
			evs[i].Seq = int64(i + 1)
		}
		return nil
	}, evs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1", "2"} {
		if e := <-sub.C; e.ID != want || e.Seq == 0 {
			t.Fatalf("published %+v, want %s with its seq", e, want)
		}
	}
	if len(b.appending) != 0 {
		t.Fatalf("conversation locks left: %v", b.appending)
	}
}

// TestFeedsCountInTheBusStats: every feed holds a subscription of the bus, so the bus's counts
// (the server's stream metrics) see each feed open, and end by its reason: fell behind, its
// conversation was deleted, or its reader closed it.
func TestFeedsCountInTheBusStats(t *testing.T) {
	var b LocalBus
	ctx := context.Background()
	slow := Follow(ctx, &b, "c1", FeedOptions{Buffer: 1})
	closed := Follow(ctx, &b, "c2", FeedOptions{Buffer: 10})
	deleted := Follow(ctx, &b, "c3", FeedOptions{Buffer: 10})
	if st := b.Stats(); st != (BusStats{Subscribers: 3}) {
		t.Fatalf("stats with three feeds open: %+v", st)
	}
	// The slow feed's reader reads nothing: its buffer holds one event, so the second drops it.
	for i := range 3 {
		b.Publish(Event{ID: fmt.Sprint(i), ConversationID: "c1"})
	}
	for range slow.C {
	}
	if err := slow.Err(); !errors.Is(err, ErrLagged) {
		t.Fatalf("slow feed ended with %v", err)
	}
	closed.Close()
	b.End("c3")
	for range deleted.C {
	}
	if err := deleted.Err(); !errors.Is(err, ErrEnded) {
		t.Fatalf("deleted conversation's feed ended with %v", err)
	}
	if st := b.Stats(); st != (BusStats{Lagged: 1, Ended: 1, Closed: 1}) {
		t.Fatalf("stats once the feeds ended: %+v", st)
	}
}

// TestFeedHoldsTheLiveEventsDuringItsReplay: while a feed replays the store, what the bus
// publishes waits (as much as its buffer holds) and comes after the replay, without the
// events the replay read already; after the replay the bus delivers on the feed's channel
// itself. A conversation that ends, or a reader that falls behind, during the replay ends
// the feed after what it had, for that reason.
func TestFeedHoldsTheLiveEventsDuringItsReplay(t *testing.T) {
	stored := func(seq int64) Event { return Event{ID: fmt.Sprint(seq), ConversationID: "c", Seq: seq} }
	// read replays seq 1 to 3 once reading is let go.
	replaying := func(letGo <-chan struct{}) Reader {
		return func(ctx context.Context, after int64, _ int) ([]Event, error) {
			select {
			case <-letGo:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			var evs []Event
			for seq := after + 1; seq <= 3; seq++ {
				evs = append(evs, stored(seq))
			}
			return evs, nil
		}
	}
	ids := func(f *Feed, n int) []string {
		var got []string
		for range n {
			e, ok := <-f.C
			if !ok {
				break
			}
			got = append(got, e.ID)
		}
		return got
	}
	for _, tc := range []struct {
		name string
		// during publishes while the feed replays.
		during func(b *LocalBus)
		want   []string
		err    error // nil: the feed goes on
	}{
		{"live events after the replay", func(b *LocalBus) {
			// 3 is read by the replay too; 5 is transient.
			b.Publish(stored(3), stored(4), Event{ID: "5", ConversationID: "c"})
		}, []string{"1", "2", "3", "4", "5"}, nil},
		{"ended meanwhile", func(b *LocalBus) {
			b.Publish(stored(4))
			b.End("c")
		}, []string{"1", "2", "3", "4"}, ErrEnded},
		{"fell behind meanwhile", func(b *LocalBus) {
			for seq := int64(4); seq <= 8; seq++ { // one more than the buffer
				b.Publish(stored(seq))
			}
		}, []string{"1", "2", "3", "4", "5", "6", "7"}, ErrLagged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b LocalBus
			letGo := make(chan struct{})
			f := Follow(t.Context(), &b, "c", FeedOptions{Read: replaying(letGo), Buffer: 4})
			defer f.Close()
			tc.during(&b)
			close(letGo)
			if got := ids(f, len(tc.want)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
			if tc.err != nil {
				if _, ok := <-f.C; ok {
					t.Fatal("the feed goes on")
				}
				if err := f.Err(); !errors.Is(err, tc.err) {
					t.Fatalf("ended with %v, want %v", err, tc.err)
				}
				return
			}
			// Released: the bus delivers itself, still without what the replay read.
			if b.Subscribers("c") != 1 {
				t.Fatal("the feed's subscription left the bus")
			}
			b.Publish(stored(2), stored(6))
			if got := ids(f, 1); !reflect.DeepEqual(got, []string{"6"}) {
				t.Fatalf("after the replay: %v, want [6]", got)
			}
		})
	}
}

// TestFeedClosedDuringItsReplay: closing a feed, or ending its context, while it replays
// ends it at once with ErrClosed or the context's cause, and takes it off the bus.
func TestFeedClosedDuringItsReplay(t *testing.T) {
	blocked := func(ctx context.Context, _ int64, _ int) ([]Event, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var b LocalBus
	f := Follow(t.Context(), &b, "c", FeedOptions{Read: blocked, Buffer: 4})
	f.Close()
	if _, ok := <-f.C; ok || !errors.Is(f.Err(), ErrClosed) {
		t.Fatalf("closed feed: open %v, err %v", ok, f.Err())
	}
	cause := errors.New("the reader left")
	ctx, cancel := context.WithCancelCause(t.Context())
	g := Follow(ctx, &b, "c", FeedOptions{Read: blocked, Buffer: 4})
	cancel(cause)
	if _, ok := <-g.C; ok || !errors.Is(g.Err(), cause) {
		t.Fatalf("feed whose context ended: open %v, err %v", ok, g.Err())
	}
	g.Close()
	if st := b.Stats(); st != (BusStats{Closed: 2}) {
		t.Fatalf("stats: %+v", st)
	}
}
