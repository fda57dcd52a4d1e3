package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/netpolicy"
)

// Suite describes an llm.Client adapter to RunClientSuite.
type Suite struct {
	// Provider is the protocol the adapter speaks, llm.ProviderOpenAI or llm.ProviderAnthropic.
	Provider string
	// Model is a model with a known price, so that cost is checked too.
	Model string
	// New builds the adapter.
	New func(llm.Config) (llm.Client, error)
}

// RunClientSuite is the conformance suite of llm.Client adapters: each runs it against a
// scripted server of its protocol, through its SDK. The tests assert on what the server
// received, decoded into llm terms, so the same expectations hold for every protocol; wire
// shapes particular to one protocol are the adapter's own tests.
func RunClientSuite(t *testing.T, s Suite) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, Suite)
	}{
		{"text reply", testTextReply},
		{"several tool calls in one reply", testToolCalls},
		{"tools are sent", testToolsSent},
		{"tool results round trip", testToolResults},
		{"images", testImages},
		{"system prompt", testSystemPrompt},
		{"max tokens and temperature", testSampling},
		{"usage and cost", testUsage},
		{"API key is sent", testAPIKey},
		{"no API key, none from the environment", testNoAPIKey},
		{"429 honours Retry-After", testRateLimit},
		{"5xx until attempts run out", testServerErrors},
		{"401 is not retried and hides the key", testAuth},
		{"400 is not retried", testBadRequest},
		{"context window exceeded", testContextWindow},
		{"HTML error page", testHTMLError},
		{"an answer past MaxResponseBytes is cut off", testOversizedAnswer},
		{"connection refused is retried", testConnectionRefused},
		{"an internal address refused by the URL policy", testInternalAddress},
		{"timeout", testTimeout},
		{"cancel stops retries", testCancelBetweenRetries},
		{"cancel aborts the request", testCancelInFlight},
		{"concurrent calls", testConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s) })
	}
}

func (s Suite) client(t *testing.T, cfg llm.Config) llm.Client {
	t.Helper()
	c, err := s.New(cfg)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

func (s Suite) server(t *testing.T, script ...Step) (*Server, llm.Client) {
	t.Helper()
	srv := NewServer(t, s.Provider, script...)
	return srv, s.client(t, srv.Config(s.Model))
}

func complete(t *testing.T, c llm.Client, req llm.Request) llm.Response {
	t.Helper()
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func userSays(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(text)}}}}
}

// recordingPolicy retries up to attempts times with exact backoff (1s, 2s, ...) and records
// the waits instead of sleeping.
func recordingPolicy(attempts int, waits *[]time.Duration) llm.RetryPolicy {
	return llm.RetryPolicy{
		MaxAttempts: attempts,
		Jitter:      func(d time.Duration) time.Duration { return d },
		Sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return ctx.Err()
		},
	}
}

// JSONEqual reports whether a and b hold the same JSON value.
func JSONEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func wantKind(t *testing.T, err error, kind llm.ErrorKind) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	if e.Kind != kind {
		t.Fatalf("error kind %q (%v), want %q", e.Kind, err, kind)
	}
	return e
}

func wantRequests(t *testing.T, srv *Server, n int) []RecordedRequest {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("server got %d requests, want %d", len(reqs), n)
	}
	return reqs
}

func testTextReply(t *testing.T, s Suite) {
	srv, c := s.server(t, Text("Hello there."))
	resp := complete(t, c, userSays("hi"))
	if resp.Message.Role != llm.RoleAssistant || resp.Message.Text() != "Hello there." || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("message = %+v, want the assistant saying %q", resp.Message, "Hello there.")
	}
	if resp.FinishReason != llm.FinishStop {
		t.Errorf("finish reason %q, want %q", resp.FinishReason, llm.FinishStop)
	}
	if resp.ResponseID == "" || resp.Model != s.Model {
		t.Errorf("response id %q, model %q; want an id and %q", resp.ResponseID, resp.Model, s.Model)
	}
	got := wantRequests(t, srv, 1)[0]
	if got.Model != s.Model || len(got.Messages) != 1 || got.Last().Role != llm.RoleUser || got.Last().Text() != "hi" {
		t.Errorf("server got model %q, messages %+v", got.Model, got.Messages)
	}
}

func testToolCalls(t *testing.T, s Suite) {
	calls := []llm.ToolCall{
		Call("terminal", `{"command":"ls -la"}`),
		Call("file_editor", `{"command":"view","path":"/workspace/README.md"}`),
	}
	_, c := s.server(t, Step{Reply: &Reply{Text: "Looking around.", ToolCalls: calls}})
	resp := complete(t, c, userSays("look"))
	got := resp.Message.ToolCalls
	if len(got) != len(calls) {
		t.Fatalf("got %d tool calls, want %d: %+v", len(got), len(calls), got)
	}
	ids := map[string]bool{}
	for i, g := range got {
		if g.Name != calls[i].Name || !JSONEqual([]byte(g.Arguments), []byte(calls[i].Arguments)) {
			t.Errorf("call %d = %s(%s), want %s(%s)", i, g.Name, g.Arguments, calls[i].Name, calls[i].Arguments)
		}
		if g.ID == "" || ids[g.ID] {
			t.Errorf("call %d has id %q; want a fresh one", i, g.ID)
		}
		ids[g.ID] = true
	}
	if resp.Message.Text() != "Looking around." {
		t.Errorf("text %q alongside the calls, want %q", resp.Message.Text(), "Looking around.")
	}
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish reason %q, want %q", resp.FinishReason, llm.FinishToolCalls)
	}
}

func testToolsSent(t *testing.T, s Suite) {
	schema := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command."},"timeout":{"type":"number"}},"required":["command"],"additionalProperties":false}`)
	srv, c := s.server(t, Text("ok"))
	req := userSays("hi")
	req.Tools = []llm.ToolSpec{
		{Name: "terminal", Description: "Run a shell command.", Parameters: schema},
		{Name: "think", Description: "Think out loud."},
	}
	complete(t, c, req)
	got := wantRequests(t, srv, 1)[0].Tools
	if len(got) != 2 {
		t.Fatalf("server got tools %+v, want 2", got)
	}
	if got[0].Name != "terminal" || got[0].Description != "Run a shell command." || !JSONEqual(got[0].Parameters, schema) {
		t.Errorf("tool 0 = %s %q %s, want terminal with %s", got[0].Name, got[0].Description, got[0].Parameters, schema)
	}
	var params struct{ Type string }
	if got[1].Name != "think" || json.Unmarshal(got[1].Parameters, &params) != nil || params.Type != "object" {
		t.Errorf("tool 1 = %s %s, want think with an object schema", got[1].Name, got[1].Parameters)
	}
}

func testToolResults(t *testing.T, s Suite) {
	srv, c := s.server(t, Text("Done."))
	history := []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("list and read")}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("On it.")}, ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "terminal", Arguments: `{"command":"ls"}`},
			{ID: "call_2", Name: "file_editor", Arguments: `{"path":"a.txt"}`},
		}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Name: "terminal", Parts: []llm.Part{llm.TextPart("a.txt\nb.txt")}},
		{Role: llm.RoleTool, ToolCallID: "call_2", Name: "file_editor", Parts: []llm.Part{llm.TextPart("hello")}},
	}
	complete(t, c, llm.Request{Messages: history})
	got := wantRequests(t, srv, 1)[0].Messages
	if len(got) != 4 {
		t.Fatalf("server got %d messages, want 4: %+v", len(got), got)
	}
	a := got[1]
	if a.Role != llm.RoleAssistant || a.Text() != "On it." || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant message = %+v", a)
	}
	for i, want := range history[1].ToolCalls {
		g := a.ToolCalls[i]
		if g.ID != want.ID || g.Name != want.Name || !JSONEqual([]byte(g.Arguments), []byte(want.Arguments)) {
			t.Errorf("sent call %d = %+v, want %+v", i, g, want)
		}
	}
	for i, want := range history[2:] {
		g := got[2+i]
		if g.Role != llm.RoleTool || g.ToolCallID != want.ToolCallID || g.Text() != want.Text() {
			t.Errorf("tool result %d = %+v, want %q for %s", i, g, want.Text(), want.ToolCallID)
		}
	}
}

func testImages(t *testing.T, s Suite) {
	const httpURL = "https://example.com/cat.png"
	const dataURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	srv, c := s.server(t, Text("A cat."))
	parts := []llm.Part{llm.TextPart("What are these?"), llm.ImagePart(httpURL), llm.ImagePart(dataURL)}
	complete(t, c, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: parts}}})
	got := wantRequests(t, srv, 1)[0].Last().Parts
	if !reflect.DeepEqual(got, parts) {
		t.Errorf("server got parts %+v, want %+v", got, parts)
	}
}

func testSystemPrompt(t *testing.T, s Suite) {
	srv, c := s.server(t, Text("ok"))
	req := llm.Request{System: "You are agentd.", Messages: []llm.Message{
		{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart("Repository notes.")}},
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}},
	}}
	complete(t, c, req)
	got := wantRequests(t, srv, 1)[0]
	if got.System != "You are agentd.\n\nRepository notes." {
		t.Errorf("system = %q", got.System)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != llm.RoleUser {
		t.Errorf("messages besides the system prompt = %+v, want the user's alone", got.Messages)
	}
}

func testSampling(t *testing.T, s Suite) {
	srv, c := s.server(t, Text("ok"))
	temp := 0.25
	req := userSays("hi")
	req.MaxTokens, req.Temperature = 1234, &temp
	complete(t, c, req)
	got := wantRequests(t, srv, 1)[0]
	if got.MaxTokens != 1234 || got.Temperature == nil || *got.Temperature != temp {
		t.Errorf("server got max tokens %d, temperature %v; want 1234, %v", got.MaxTokens, got.Temperature, temp)
	}
}

func testUsage(t *testing.T, s Suite) {
	usage := llm.Usage{PromptTokens: 12000, CompletionTokens: 800, CacheReadTokens: 4000, CacheWriteTokens: 1000, ReasoningTokens: 300}
	_, c := s.server(t, Step{Reply: &Reply{Text: "ok", Usage: usage}})
	resp := complete(t, c, userSays("hi"))
	if resp.Usage != usage {
		t.Errorf("usage = %+v, want %+v", resp.Usage, usage)
	}
	var m llm.Metrics
	m.Add(resp.Model, resp.Usage, resp.ResponseID)
	snap := m.Snapshot()
	want := llm.Cost(s.Model, usage)
	if want <= 0 || snap.AccumulatedCost != want {
		t.Errorf("accumulated cost %v, want %v (> 0)", snap.AccumulatedCost, want)
	}
	tu := snap.AccumulatedTokenUsage
	if tu.PromptTokens != 12000 || tu.CompletionTokens != 800 || tu.ResponseID != resp.ResponseID || tu.ContextWindow == 0 {
		t.Errorf("token usage = %+v", tu)
	}
}

func testAPIKey(t *testing.T, s Suite) {
	srv, c := s.server(t, Text("ok"))
	complete(t, c, userSays("hi"))
	if got := wantRequests(t, srv, 1)[0].APIKey; got != APIKey {
		t.Errorf("server got key %q, want %q", got, APIKey)
	}
}

func testNoAPIKey(t *testing.T, s Suite) {
	t.Setenv("OPENAI_API_KEY", "sk-from-environment")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-environment")
	srv := NewServer(t, s.Provider, Text("ok"))
	cfg := srv.Config(s.Model)
	cfg.APIKey = ""
	complete(t, s.client(t, cfg), userSays("hi"))
	got := wantRequests(t, srv, 1)[0]
	if got.APIKey != "" || got.Header.Get("Authorization") != "" || got.Header.Get("X-Api-Key") != "" {
		t.Errorf("server got credentials %q; want none", got.APIKey)
	}
}

func testRateLimit(t *testing.T, s Suite) {
	srv, c := s.server(t, RateLimited("2"), Text("ok"))
	var waits []time.Duration
	resp, err := llm.WithRetry(c, recordingPolicy(5, &waits)).Complete(context.Background(), userSays("hi"))
	if err != nil || resp.Message.Text() != "ok" {
		t.Fatalf("Complete = %q, %v; want ok", resp.Message.Text(), err)
	}
	if !reflect.DeepEqual(waits, []time.Duration{2 * time.Second}) {
		t.Errorf("waits %v, want [2s] from Retry-After", waits)
	}
	wantRequests(t, srv, 2)
}

func testServerErrors(t *testing.T, s Suite) {
	srv, c := s.server(t, Fail(500, "boom 1"), Fail(503, "boom 2"), Fail(500, "boom 3"))
	var waits []time.Duration
	_, err := llm.WithRetry(c, recordingPolicy(3, &waits)).Complete(context.Background(), userSays("hi"))
	var re *llm.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("error %v, want a *RetryError after 3 attempts", err)
	}
	e := wantKind(t, err, llm.KindServer)
	if e.Status != 500 || !strings.Contains(e.Msg, "boom 3") || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %q (status %d), want the last 500 and the attempt count", err, e.Status)
	}
	if !reflect.DeepEqual(waits, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("waits %v, want [1s 2s]", waits)
	}
	wantRequests(t, srv, 3)
}

func testAuth(t *testing.T, s Suite) {
	const wrong = "sk-wrong-secret-key"
	srv := NewServer(t, s.Provider)
	srv.RequireAPIKey(APIKey)
	cfg := srv.Config(s.Model)
	cfg.APIKey = wrong
	var waits []time.Duration
	_, err := llm.WithRetry(s.client(t, cfg), recordingPolicy(5, &waits)).Complete(context.Background(), userSays("hi"))
	e := wantKind(t, err, llm.KindAuth)
	var re *llm.RetryError
	if e.Status != 401 || errors.As(err, &re) || len(waits) != 0 {
		t.Errorf("error %v (status %d, waits %v); want a 401 returned at once", err, e.Status, waits)
	}
	if strings.Contains(err.Error(), wrong) {
		t.Errorf("error %q shows the API key", err)
	}
	wantRequests(t, srv, 1)
}

func testBadRequest(t *testing.T, s Suite) {
	srv, c := s.server(t, Fail(400, "tools.0.name: invalid"))
	var waits []time.Duration
	_, err := llm.WithRetry(c, recordingPolicy(5, &waits)).Complete(context.Background(), userSays("hi"))
	e := wantKind(t, err, llm.KindBadRequest)
	if !strings.Contains(e.Msg, "tools.0.name: invalid") || e.Retryable() {
		t.Errorf("error %v; want the provider's message, not retryable", err)
	}
	wantRequests(t, srv, 1)
}

func testContextWindow(t *testing.T, s Suite) {
	srv, c := s.server(t, ContextWindowExceeded())
	var waits []time.Duration
	_, err := llm.WithRetry(c, recordingPolicy(5, &waits)).Complete(context.Background(), userSays("hi"))
	wantKind(t, err, llm.KindContextWindow)
	wantRequests(t, srv, 1)
}

func testHTMLError(t *testing.T, s Suite) {
	_, c := s.server(t, Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}})
	_, err := c.Complete(context.Background(), userSays("hi"))
	if e := wantKind(t, err, llm.KindServer); e.Status != 502 {
		t.Errorf("status %d, want 502", e.Status)
	}
}

// testOversizedAnswer: a model server that answers without end (a user's own may) is read up
// to llm.MaxResponseBytes, and the call fails there, without a retry, instead of filling the
// server's memory.
func testOversizedAnswer(t *testing.T, s Suite) {
	const chunk, chunks = 1 << 20, 2 * llm.MaxResponseBytes >> 20
	written := make(chan int, 1)
	srv := NewServer(t, s.Provider, Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n, _ := w.Write([]byte(`{"id": "`))
		filler := bytes.Repeat([]byte("a"), chunk)
		for range chunks {
			m, err := w.Write(filler)
			n += m
			if err != nil {
				break // the client left
			}
		}
		written <- n
	}})
	var waits []time.Duration
	_, err := llm.WithRetry(s.client(t, srv.Config(s.Model)), recordingPolicy(3, &waits)).Complete(context.Background(), userSays("hi"))
	e := wantKind(t, err, llm.KindOther)
	if !errors.Is(err, llm.ErrResponseTooLarge) || e.Msg != llm.ErrResponseTooLarge.Error() {
		t.Errorf("error %v, want the answer refused as too large", err)
	}
	if len(waits) != 0 {
		t.Errorf("retried after %v; the same server gives the same answer", waits)
	}
	if n := <-written; n >= chunks*chunk {
		t.Errorf("the server wrote all of its %d bytes: the client read on past the bound", n)
	}
}

func testConnectionRefused(t *testing.T, s Suite) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr
	if s.Provider == llm.ProviderOpenAI {
		base += "/v1"
	}
	c := s.client(t, llm.Config{Provider: s.Provider, Model: s.Model, BaseURL: base, APIKey: APIKey})
	var waits []time.Duration
	_, err = llm.WithRetry(c, recordingPolicy(3, &waits)).Complete(context.Background(), userSays("hi"))
	wantKind(t, err, llm.KindConnection)
	var re *llm.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || len(waits) != 2 {
		t.Errorf("error %v after waits %v; want 3 attempts", err, waits)
	}
	if strings.Contains(err.Error(), APIKey) {
		t.Errorf("error %q shows the API key", err)
	}
}

func testInternalAddress(t *testing.T, s Suite) {
	srv := NewServer(t, s.Provider) // any request reaching it fails the test
	policy, err := netpolicy.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config(s.Model)
	cfg.HTTPClient = policy.Client(false)
	var waits []time.Duration
	_, err = llm.WithRetry(s.client(t, cfg), recordingPolicy(3, &waits)).Complete(context.Background(), userSays("hi"))
	e := wantKind(t, err, llm.KindInternalAddress)
	if want := "the base URL resolves to 127.0.0.1, a loopback address; internal addresses are refused unless the administrator allows them"; e.Msg != want {
		t.Errorf("message %q, want %q", e.Msg, want)
	}
	if len(waits) != 0 {
		t.Errorf("retried after %v; a refusal stays a refusal", waits)
	}
	wantRequests(t, srv, 0)
}

// hang answers after the request is cancelled or 10 seconds, whichever is first.
func hang(started chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if started != nil {
			close(started)
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		http.Error(w, "too late", http.StatusInternalServerError)
	}
}

func testTimeout(t *testing.T, s Suite) {
	srv := NewServer(t, s.Provider, Step{HTTP: hang(nil)})
	cfg := srv.Config(s.Model)
	cfg.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := s.client(t, cfg).Complete(context.Background(), userSays("hi"))
	if e := wantKind(t, err, llm.KindTimeout); !e.Retryable() {
		t.Errorf("a timeout is not retryable")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timed out after %v, want about 200ms", d)
	}
}

func testCancelBetweenRetries(t *testing.T, s Suite) {
	srv, c := s.server(t, Fail(503, "overloaded"), Fail(503, "overloaded"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	policy := llm.RetryPolicy{
		BaseDelay: time.Hour,
		MaxDelay:  time.Hour,
		OnRetry:   func(int, error, time.Duration) { cancel() },
	}
	start := time.Now()
	_, err := llm.WithRetry(c, policy).Complete(ctx, userSays("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v, want at once", d)
	}
	wantRequests(t, srv, 1)
}

func testCancelInFlight(t *testing.T, s Suite) {
	started := make(chan struct{})
	_, c := s.server(t, Step{HTTP: hang(started)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	start := time.Now()
	_, err := llm.WithRetry(c, llm.RetryPolicy{}).Complete(ctx, userSays("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	var e *llm.Error
	if errors.As(err, &e) {
		t.Errorf("a cancelled call is an *llm.Error %v, which could be retried", e)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v, want at once", d)
	}
}

func testConcurrent(t *testing.T, s Suite) {
	const n = 8
	script := make([]Step, n)
	for i := range script {
		script[i] = Step{Func: func(r RecordedRequest) Step { return Text("echo: " + r.Last().Text()) }}
	}
	srv, c := s.server(t, script...)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			msg := strings.Repeat("x", i+1)
			resp, err := c.Complete(context.Background(), userSays(msg))
			if err != nil || resp.Message.Text() != "echo: "+msg {
				t.Errorf("call %d: %q, %v", i, resp.Message.Text(), err)
			}
		})
	}
	wg.Wait()
	wantRequests(t, srv, n)
}
