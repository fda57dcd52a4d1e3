package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/llm/openai"
)

func newClient(t *testing.T, cfg llm.Config) llm.Client {
	t.Helper()
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func userSays(parts ...llm.Part) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: parts}}}
}

// wireMessage is a chat completions message as sent.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
}

func sent(t *testing.T, srv *llmtest.Server) wireRequest {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	var w wireRequest
	if err := reqs[0].Decode(&w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWireShape(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Text("ok"))
	req := llm.Request{
		System: "Be brief.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}},
			{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("see"), llm.ImagePart("https://example.com/a.png"), llm.ImagePart("data:image/png;base64,AAAA")}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "terminal", Arguments: `{"command":`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Parts: []llm.Part{llm.TextPart("error: bad arguments")}},
		},
		Tools:     []llm.ToolSpec{{Name: "terminal", Description: "Run.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
		MaxTokens: 100,
	}
	if _, err := newClient(t, srv.Config("gpt-4o")).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	w := sent(t, srv)
	// The body goes out with its length, not chunked: not every compatible server takes that.
	if got := srv.Requests()[0]; got.ContentLength != int64(len(got.Body)) {
		t.Errorf("Content-Length %d for a body of %d bytes", got.ContentLength, len(got.Body))
	}

	roles := []string{}
	for _, m := range w.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"system", "user", "user", "assistant", "tool"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	if string(w.Messages[0].Content) != `"Be brief."` || string(w.Messages[1].Content) != `"hi"` {
		t.Errorf("text-only content %s, %s; want plain strings", w.Messages[0].Content, w.Messages[1].Content)
	}
	wantParts := `[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]`
	if !llmtest.JSONEqual(w.Messages[2].Content, []byte(wantParts)) {
		t.Errorf("image content %s\nwant %s", w.Messages[2].Content, wantParts)
	}
	a := w.Messages[3]
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Name != "terminal" || a.ToolCalls[0].Function.Arguments != `{"command":` {
		t.Errorf("assistant tool calls %+v; want the malformed arguments sent verbatim", a.ToolCalls)
	}
	if tm := w.Messages[4]; tm.ToolCallID != "call_1" || string(tm.Content) != `"error: bad arguments"` {
		t.Errorf("tool message %+v", tm)
	}
	if len(w.Tools) != 1 || w.Tools[0].Type != "function" || w.Tools[0].Function.Name != "terminal" || w.Tools[0].Function.Description != "Run." {
		t.Errorf("tools %+v", w.Tools)
	}
	// A compatible server (not api.openai.com) gets max_tokens.
	if w.MaxTokens == nil || *w.MaxTokens != 100 || w.MaxCompletionTokens != nil {
		t.Errorf("max_tokens %v, max_completion_tokens %v; want 100 and none", w.MaxTokens, w.MaxCompletionTokens)
	}
}

func TestToolResultImagesFollowTheToolResults(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Text("ok"))
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("view both")}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "file_editor", Arguments: `{}`}, {ID: "c2", Name: "file_editor", Arguments: `{}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Parts: []llm.Part{llm.TextPart("image one"), llm.ImagePart("data:image/png;base64,AAAA")}},
		{Role: llm.RoleTool, ToolCallID: "c2", Parts: []llm.Part{llm.TextPart("image two"), llm.ImagePart("https://example.com/b.png")}},
	}}
	if _, err := newClient(t, srv.Config("gpt-4o")).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages
	if len(got) != 5 || got[2].Role != llm.RoleTool || got[3].Role != llm.RoleTool || got[4].Role != llm.RoleUser {
		t.Fatalf("messages %+v; want both tool results, then a user message", got)
	}
	var images []string
	for _, p := range got[4].Parts {
		if p.Type == llm.PartImage {
			images = append(images, p.ImageURL)
		}
	}
	if want := []string{"data:image/png;base64,AAAA", "https://example.com/b.png"}; !reflect.DeepEqual(images, want) {
		t.Errorf("images after the tool results %v, want %v", images, want)
	}
	if got[2].Text() != "image one" || got[3].Text() != "image two" {
		t.Errorf("tool texts %q, %q", got[2].Text(), got[3].Text())
	}
}

func TestReplyShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  string
		check func(*testing.T, llm.Response, error)
	}{
		{
			name: "malformed arguments pass through",
			body: `{"id":"r1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"ls"}}]}}]}`,
			check: func(t *testing.T, r llm.Response, err error) {
				if err != nil || len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Arguments != `{"command": "ls` {
					t.Errorf("%+v, %v; want the arguments verbatim", r.Message, err)
				}
			},
		},
		{
			name: "missing tool call ids are made up",
			body: `{"id":"r2","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"type":"function","function":{"name":"b","arguments":"{}"}}]}}]}`,
			check: func(t *testing.T, r llm.Response, err error) {
				calls := r.Message.ToolCalls
				if err != nil || len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID {
					t.Errorf("%+v, %v; want two distinct ids", calls, err)
				}
			},
		},
		{
			name: "refusal becomes text",
			body: `{"id":"r3","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`,
			check: func(t *testing.T, r llm.Response, err error) {
				if err != nil || r.Message.Text() != "I can't help with that." {
					t.Errorf("%+v, %v", r.Message, err)
				}
			},
		},
		{
			name: "a body cut short is a connection failure",
			body: `{"id":"r5","object":`,
			check: func(t *testing.T, r llm.Response, err error) {
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != llm.KindConnection {
					t.Errorf("error %v, want KindConnection", err)
				}
			},
		},
		{
			name: "no choices is a retryable server error",
			body: `{"id":"r4","object":"chat.completion","model":"m","choices":[]}`,
			check: func(t *testing.T, r llm.Response, err error) {
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != llm.KindServer || !e.Retryable() {
					t.Errorf("error %v, want a retryable server error", err)
				}
			},
		},
		{
			name: "not JSON",
			body: `<html>hello</html>`,
			check: func(t *testing.T, r llm.Response, err error) {
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != llm.KindOther {
					t.Errorf("error %v, want KindOther", err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, llmtest.Step{HTTP: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}})
			resp, err := newClient(t, srv.Config("m")).Complete(context.Background(), userSays(llm.TextPart("hi")))
			tc.check(t, resp, err)
		})
	}
}

func TestQuotaIsNotRetried(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Step{Error: &llmtest.ErrorReply{
		Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota",
	}})
	_, err := llm.WithRetry(newClient(t, srv.Config("gpt-4o")), llm.RetryPolicy{}).Complete(context.Background(), userSays(llm.TextPart("hi")))
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindOther || e.Retryable() || len(srv.Requests()) != 1 {
		t.Errorf("error %v after %d requests; want KindOther at once", err, len(srv.Requests()))
	}
}

func TestModelNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider string
		model    string
		override string
		want     string
	}{
		{"routing prefix stripped", "", "openai/gpt-4o", "", "gpt-4o"},
		{"explicit provider keeps the name", llm.ProviderOpenAI, "anthropic/claude-sonnet-4", "", "anthropic/claude-sonnet-4"},
		{"request overrides", llm.ProviderOpenAI, "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, llmtest.Text("ok"))
			cfg := srv.Config(tc.model)
			cfg.Provider = tc.provider
			req := userSays(llm.TextPart("hi"))
			req.Model = tc.override
			if _, err := newClient(t, cfg).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := srv.Requests()[0].Model; got != tc.want {
				t.Errorf("server got model %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBaseURLWithoutVersion(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Text("ok"))
	cfg := srv.Config("llama3")
	cfg.BaseURL = srv.URL()[:len(srv.URL())-len("/v1")] // llama.cpp and some proxies serve /chat/completions
	if _, err := newClient(t, cfg).Complete(context.Background(), userSays(llm.TextPart("hi"))); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Path; got != "/chat/completions" {
		t.Errorf("path %q, want /chat/completions", got)
	}
}

func TestInvalidRequestsAreNotSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  llm.Request
	}{
		{"image URL scheme", userSays(llm.ImagePart("ftp://example.com/a.png"))},
		{"tool parameters", llm.Request{Tools: []llm.ToolSpec{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}},
		{"tool result without id", llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.TextPart("r")}}}}},
		{"role", llm.Request{Messages: []llm.Message{{Role: "narrator"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t)
			_, err := newClient(t, srv.Config("gpt-4o")).Complete(context.Background(), tc.req)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || len(srv.Requests()) != 0 {
				t.Errorf("error %v, %d requests; want KindBadRequest and nothing sent", err, len(srv.Requests()))
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []llm.Config{
		{Model: "claude-sonnet-4-5"},
		{Provider: llm.ProviderOpenAI},
		{Model: "gpt-4o", BaseURL: "localhost:8000"},
		{Model: "gpt-4o", BaseURL: "ftp://example.com"},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestToolSchemasSentAsGiven sends the same tools from one client many times at once, as the
// agents of a server do, and a changed schema of the same tool after: every request carries
// each schema as given, nested keywords and all (the client keeps converted tools).
func TestToolSchemasSentAsGiven(t *testing.T) {
	const n = 8
	steps := make([]llmtest.Step, n+1)
	for i := range steps {
		steps[i] = llmtest.Text("ok")
	}
	srv := llmtest.NewOpenAI(t, steps...)
	c := newClient(t, srv.Config("gpt-4o"))
	schema := `{"type":"object","properties":{"command":{"type":"string","description":"run \"it\"","enum":["a","b"]},"timeout":{"type":"number","minimum":1.5}},"required":["command"],"additionalProperties":false}`
	tools := []llm.ToolSpec{
		{Name: "terminal", Description: "Run.", Parameters: json.RawMessage(schema)},
		{Name: "think"},
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}}}, Tools: tools}
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Complete(context.Background(), req)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	changed := `{"type":"object","properties":{"path":{"type":"string"}}}`
	req.Tools = []llm.ToolSpec{{Name: "terminal", Description: "Run.", Parameters: json.RawMessage(changed)}}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != n+1 {
		t.Fatalf("server got %d requests, want %d", len(reqs), n+1)
	}
	for i, r := range reqs {
		var w wireRequest
		if err := r.Decode(&w); err != nil {
			t.Fatal(err)
		}
		want := []string{schema, `{"type":"object","properties":{}}`}
		if i == n {
			want = []string{changed}
		}
		if len(w.Tools) != len(want) {
			t.Fatalf("request %d: %d tools, want %d", i, len(w.Tools), len(want))
		}
		for j, tool := range w.Tools {
			if !llmtest.JSONEqual(tool.Function.Parameters, []byte(want[j])) {
				t.Errorf("request %d, tool %s: parameters %s\nwant %s", i, tool.Function.Name, tool.Function.Parameters, want[j])
			}
		}
	}
}

// TestGrowingConversationSentAsNew sends a conversation that grows by a step with each
// request, as an agent does, from one client; a second request changes an earlier message
// and its system prompt, and tool results carry images. Each request's body is the one a
// new client sends for the same request: what the client keeps of earlier requests never
// changes what it sends.
func TestGrowingConversationSentAsNew(t *testing.T) {
	steps := make([]llmtest.Step, 20)
	for i := range steps {
		steps[i] = llmtest.Text("ok")
	}
	kept := llmtest.NewOpenAI(t, steps...)
	fresh := llmtest.NewOpenAI(t, steps...)
	c := newClient(t, kept.Config("gpt-4o"))
	tools := []llm.ToolSpec{{Name: "terminal", Description: "Run.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}
	msgs := []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hi")}}}
	system := "Be brief."
	for i := range 8 {
		id := "call_" + string(rune('a'+i))
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("step")}, ToolCalls: []llm.ToolCall{{ID: id, Name: "terminal", Arguments: `{"command":"ls"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Parts: []llm.Part{llm.TextPart("out " + id)}})
		if i%3 == 1 {
			msgs[len(msgs)-1].Parts = append(msgs[len(msgs)-1].Parts, llm.ImagePart("data:image/png;base64,AAAA"))
		}
		if i == 4 {
			// An earlier message changes (as condensation does), and so does the system prompt.
			msgs[1].Parts = []llm.Part{llm.TextPart("a changed step")}
			system = "Be briefer."
		}
		req := llm.Request{System: system, Messages: slices.Clone(msgs), Tools: tools}
		if _, err := c.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if _, err := newClient(t, fresh.Config("gpt-4o")).Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		got, want := kept.Requests()[i].Body, fresh.Requests()[i].Body
		if !llmtest.JSONEqual(got, want) {
			t.Fatalf("request %d from the client that sent the earlier ones:\n%s\nwant, as a new client sends it:\n%s", i, got, want)
		}
	}
}
