package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	"github.com/agentd/agentd/internal/llm"
)

// TestMaxTokensParameter checks which cap is sent: OpenAI's reasoning models accept only
// max_completion_tokens, while compatible servers know max_tokens.
func TestMaxTokensParameter(t *testing.T) {
	for _, tc := range []struct {
		baseURL, want string
	}{
		{"", "max_completion_tokens"},
		{"https://api.openai.com/v1", "max_completion_tokens"},
		{"http://localhost:11434/v1", "max_tokens"},
		{"https://openrouter.ai/api/v1", "max_tokens"},
	} {
		c, err := New(llm.Config{Model: "o4-mini", BaseURL: tc.baseURL})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.(*client).params(llm.Request{MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(p)
		var fields map[string]any
		_ = json.Unmarshal(body, &fields)
		_, hasMax := fields["max_tokens"]
		_, hasCompletion := fields["max_completion_tokens"]
		if got := map[bool]string{true: "max_completion_tokens", false: "max_tokens"}[hasCompletion]; got != tc.want || hasMax == hasCompletion {
			t.Errorf("base URL %q: sent %s, want only %s", tc.baseURL, body, tc.want)
		}
	}
}

// TestBodyIsTheSDKsEncoding: the body the client sends, with messages and tools written as
// their kept JSON, is the SDK's own encoding of the same request, before and after the
// client has kept the JSON of its messages and of its other fields, and after those fields
// change.
func TestBodyIsTheSDKsEncoding(t *testing.T) {
	c0, err := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	c := c0.(*client)
	temp := 0.25
	req := llm.Request{
		System: "Be brief.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Name: "ann", Parts: []llm.Part{llm.TextPart("see"), llm.ImagePart("https://example.com/a.png")}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("looking")}, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "terminal", Arguments: `{"command":"ls"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Parts: []llm.Part{llm.TextPart("a.png"), llm.ImagePart("data:image/png;base64,AAAA")}},
			{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("and \"quotes\" \u2028 too")}},
		},
		Tools: []llm.ToolSpec{
			{Name: "terminal", Description: "Run.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
			{Name: "think"},
		},
		MaxTokens:   100,
		Temperature: &temp,
	}
	for round, change := range []func(*llm.Request){
		nil, nil,
		func(r *llm.Request) { r.Model, r.MaxTokens = "gpt-4.1", 50 },
		func(r *llm.Request) { r.Temperature = nil },
		func(r *llm.Request) { r.Model = "" },
		func(r *llm.Request) { r.Tools = r.Tools[:1] },
		func(r *llm.Request) { r.Tools = nil },
		func(r *llm.Request) { r.System, r.Messages = "", r.Messages[3:] },
	} {
		if change != nil {
			change(&req)
		}
		b, err := c.body(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(b.reader())
		if err != nil || int64(len(body)) != b.size {
			t.Fatalf("round %d: read %d bytes (%v) of a body of %d", round, len(body), err, b.size)
		}
		// Read in pieces of every size, a new reader reads the same.
		if err := iotest.TestReader(b.reader(), body); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !json.Valid(body) {
			t.Fatalf("round %d: body is not JSON: %s", round, body)
		}
		// The SDK's own encoding, from a client that kept nothing.
		fresh, _ := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
		p, err := fresh.(*client).params(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got, wantV any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &wantV); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantV) {
			t.Fatalf("round %d: body\n%s\nwant the SDK's\n%s", round, body, want)
		}
	}
}

// TestClientsShareTheSystemMessagesJSON: clients that send the same system message keep one
// copy of its JSON, and the shared copy is dropped once no client keeps it.
func TestClientsShareTheSystemMessagesJSON(t *testing.T) {
	system := "You are a test of shared system messages, " + strings.Repeat("long ", 100)
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart(system)}},
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}},
	}}
	systemJSONOf := func(c *client) json.RawMessage {
		t.Helper()
		if _, err := c.body(req); err != nil {
			t.Fatal(err)
		}
		for _, e := range c.encoded.last {
			if e.msg.Role == llm.RoleSystem {
				return e.json
			}
		}
		t.Fatal("no system message kept")
		return nil
	}
	newClient := func() *client {
		c, err := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
		if err != nil {
			t.Fatal(err)
		}
		return c.(*client)
	}
	a, b := newClient(), newClient()
	ja, jb := systemJSONOf(a), systemJSONOf(b)
	if unsafe.SliceData(ja) != unsafe.SliceData(jb) {
		t.Fatal("two clients keep their own copies of the same system message's JSON")
	}
	// A second request of one client keeps the shared copy.
	if j := systemJSONOf(a); unsafe.SliceData(j) != unsafe.SliceData(ja) {
		t.Fatal("a client's second request holds another copy")
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	a, b = nil, nil
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		systemJSON.mu.Lock()
		_, held := systemJSON.byText[system]
		systemJSON.mu.Unlock()
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared system message outlived every client that kept it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeptBodiesNeverChange: a body built earlier reads the same after the client built
// others (it may be read again, for a retry, or still be under way for another caller of the
// client): after a shorter request, one that departs from it, a condensation, a new system
// prompt and images of tool results. Each body is what a new client sends. A message sent
// before goes out as the JSON kept for it, whether at its place or moved.
func TestKeptBodiesNeverChange(t *testing.T) {
	user := func(text string) llm.Message {
		return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(text)}}
	}
	call := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "think", Arguments: `{"thought":"` + id + `"}`}}}
	}
	result := func(id string, images ...string) llm.Message {
		m := llm.Message{Role: llm.RoleTool, ToolCallID: id, Parts: []llm.Part{llm.TextPart("done " + id)}}
		for _, u := range images {
			m.Parts = append(m.Parts, llm.ImagePart(u))
		}
		return m
	}
	u, a1, t1, a2, t2 := user("start"), call("c1"), result("c1"), call("c2"), result("c2")
	x, tx, y, ty := call("cx"), result("cx", "data:image/png;base64,AAAA"), call("cy"), result("cy")
	summary, more := user("summary of what came before"), user("more")
	tools := []llm.ToolSpec{{Name: "think"}}
	reqs := []llm.Request{
		{System: "one", Messages: []llm.Message{u, a1, t1, a2, t2}, Tools: tools},
		{System: "one", Messages: []llm.Message{u, a1}, Tools: tools},                      // shorter
		{System: "one", Messages: []llm.Message{u, a1, x, tx, y, ty}, Tools: tools},        // departs at 2
		{System: "one", Messages: []llm.Message{u, summary, x, tx, y, ty, a2}},             // condensed
		{System: "two", Messages: []llm.Message{u, summary, x, tx, y, ty, a2, t2}},         // new system prompt
		{System: "two", Messages: []llm.Message{u, summary, x, tx, y, ty, a2, t2, more}},   // grows
		{System: "two", Messages: []llm.Message{u, summary, x, tx, y, ty, a2, t2, more}},   // again
		{System: "two", Messages: []llm.Message{x, tx, y, ty, a2, t2, more}, Tools: tools}, // all moved
	}
	c0, err := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	c := c0.(*client)
	read := func(b *requestBody) []byte {
		t.Helper()
		out, err := io.ReadAll(b.reader())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var bodies []*requestBody
	for i, req := range reqs {
		b, err := c.body(req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
		if i == 0 {
			continue
		}
		// Every message the previous request sent goes out as the JSON it was sent as.
		prev := bodies[i-1].raw.messages
		for _, e := range b.raw.messages {
			if e.images {
				continue
			}
			for _, p := range prev {
				if !p.images && equalMessages(p.msg, e.msg) && unsafe.SliceData(p.json) != unsafe.SliceData(e.json) {
					t.Fatalf("request %d encoded %s again", i, e.json)
				}
			}
		}
	}
	for i, req := range reqs {
		fresh, _ := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
		want, err := fresh.(*client).body(req)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := read(bodies[i]), read(want); !bytes.Equal(got, want) {
			t.Fatalf("request %d, read after the others were built:\n%s\nwant, as a new client sends it:\n%s", i, got, want)
		}
	}
}

// BenchmarkStepBody is the body of one agent step's request late in a long conversation: the
// conversation so far (300 messages) sent again with the step's action and result appended,
// and read whole, as the transport does.
func BenchmarkStepBody(b *testing.B) {
	c0, err := New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		b.Fatal(err)
	}
	c := c0.(*client)
	msgs := []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("Look into the failing test and fix it.")}}}
	step := func(i int) {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "terminal", Arguments: `{"command":"go test ./... -run TestStep` + id + `"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Parts: []llm.Part{llm.TextPart(strings.Repeat("ok  \tpackage/path\t0.042s\n", 8))}})
	}
	for i := range 150 {
		step(i)
	}
	req := llm.Request{System: strings.Repeat("You are a careful engineer. ", 40), Tools: []llm.ToolSpec{{Name: "terminal"}, {Name: "think"}}}
	send := func() {
		req.Messages = msgs
		body, err := c.body(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, body.reader()); err != nil {
			b.Fatal(err)
		}
	}
	send()
	start := len(msgs)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if len(msgs) >= start+100 {
			// Back to 300 messages, as a new client that sent them once: the conversation
			// grows by a step at every step, as an agent's does, but stays about as long.
			b.StopTimer()
			msgs = msgs[:start:start]
			c0, _ = New(llm.Config{Model: "gpt-4o", BaseURL: "http://127.0.0.1:1/v1"})
			c = c0.(*client)
			send()
			b.StartTimer()
		}
		step(1000 + i)
		send()
	}
}

// TestToolCacheBounded: the converted tools kept hold at most maxCachedToolBytes, however
// large the descriptions users' MCP servers give their tools; a tool is kept once converted.
func TestToolCacheBounded(t *testing.T) {
	var c toolCache
	desc := strings.Repeat("d", 1<<20)
	for i := range 40 {
		spec := llm.ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: desc, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
		if _, _, err := c.convert(spec); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		n, kept := c.bytes, len(c.tools)
		_, ok := c.tools[toolKey{spec.Name, spec.Description, string(spec.Parameters)}]
		c.mu.Unlock()
		if n > maxCachedToolBytes {
			t.Fatalf("after %d tools of 1 MiB the cache holds %d bytes, over %d", i+1, n, maxCachedToolBytes)
		}
		if !ok || kept == 0 {
			t.Fatalf("tool %d is not kept just after its conversion", i)
		}
	}
}
