package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
)

// The event page written by splicing the stored bodies is byte for byte what encoding/json
// writes for the same page, so clients cannot tell the two apart.
func TestEventPageSplicesWhatEncodingJSONWrites(t *testing.T) {
	bodies := []string{
		`{"kind":"MessageEvent","id":"a","llm_message":{"content":[{"type":"text","text":"x \u003c y \u0026\u0026 \"quoted\" é 😀"}]}}`,
		`{"kind":"ObservationEvent","id":"b","observation":{"content":"line1\nline2\ttab","exit_code":0,"list":[1,2.5,null,true]}}`,
		`{}`,
		``,
	}
	for _, next := range []string{"", "MTcwMDAwMDAwMDAwMDAwMDAwMHx4\"<&>"} {
		var evs []event.Event
		page := apitypes.EventPage{Items: []apitypes.Event{}, NextPageID: optString(next)}
		for _, b := range bodies {
			evs = append(evs, event.Event{Body: json.RawMessage(b)})
			page.Items = append(page.Items, apitypes.Event(b))
		}
		for n := range len(evs) + 1 {
			want := httptest.NewRecorder()
			writeJSON(want, http.StatusOK, apitypes.EventPage{Items: page.Items[:n], NextPageID: page.NextPageID})
			got := httptest.NewRecorder()
			writeEventPage(got, evs[:n], next)
			if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("%d events, next %q:\n got %s\nwant %s", n, next, got.Body.Bytes(), want.Body.Bytes())
			}
			if !json.Valid(got.Body.Bytes()) {
				t.Fatalf("not JSON: %s", got.Body.Bytes())
			}
			for _, h := range []string{"Content-Type", "Cache-Control"} {
				if got.Header().Get(h) != want.Header().Get(h) {
					t.Fatalf("%s: got %q, want %q", h, got.Header().Get(h), want.Header().Get(h))
				}
			}
		}
	}
}

// A buffer that grew past the bound is not kept for the next answer.
func TestPooledBuffersAreBounded(t *testing.T) {
	b := getBuffer()
	b.Grow(2 * maxPooledBuffer)
	putBuffer(b)
	for range 100 {
		if c := getBuffer(); c.Cap() > maxPooledBuffer {
			t.Fatalf("the pool kept a buffer of %d bytes", c.Cap())
		}
	}
}

// A page of start tasks, written with each stored request spliced in, holds what answering
// for each task alone (through encoding/json) holds.
func TestStartTaskPageHoldsTheTasksAnswers(t *testing.T) {
	a := &API{d: Deps{PublicURL: "http://agentd.example"}}
	req, err := json.Marshal(apitypes.AppConversationStartRequest{
		SelectedRepository: ptr("acme/app"), PRNumber: []int{4},
		InitialMessage: &apitypes.SendMessageRequest{Role: ptr(apitypes.MessageRole("user")), Run: true,
			Content: []apitypes.Content{{Text: &apitypes.TextContent{Type: "text", Text: `a "request":{ <b> & ü`}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 123456000, time.UTC)
	tasks := []conversation.StartTask{
		{ID: "t1", OwnerID: "u1", Status: conversation.TaskReady, ConversationID: "c1", SandboxID: "s1", Request: req, CreatedAt: at, UpdatedAt: at},
		{ID: "t2", OwnerID: "u1", Status: conversation.TaskError, Detail: `failed: "request":{"x":1}`, Request: req, CreatedAt: at, UpdatedAt: at.Add(time.Second)},
		{ID: "t3", Status: conversation.TaskWorking, CreatedAt: at, UpdatedAt: at},
	}
	rec := httptest.NewRecorder()
	writePage(rec, len(tasks), "next", func(buf *bytes.Buffer, i int) { a.appendStartTask(buf, tasks[i]) })
	var page struct {
		Items      []any   `json:"items"`
		NextPageID *string `json:"next_page_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatalf("page %s: %v", rec.Body.Bytes(), err)
	}
	if len(page.Items) != len(tasks) || page.NextPageID == nil || *page.NextPageID != "next" {
		t.Fatalf("page %s", rec.Body.Bytes())
	}
	for i, task := range tasks {
		one := httptest.NewRecorder()
		writeJSON(one, http.StatusOK, a.startTask(task))
		var want any
		if err := json.Unmarshal(one.Body.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(page.Items[i], want) {
			t.Fatalf("task %s in the page:\n%v\nalone:\n%v", task.ID, page.Items[i], want)
		}
	}
}
