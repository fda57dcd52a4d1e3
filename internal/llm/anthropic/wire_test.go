package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/anthropic"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

const model = "claude-sonnet-4-5"

func newClient(t *testing.T, cfg llm.Config) llm.Client {
	t.Helper()
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func text(s string) []llm.Part { return []llm.Part{llm.TextPart(s)} }

// wireBlock is a content block as sent.
type wireBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type      string `json:"type"`
		URL       string `json:"url"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   []wireBlock     `json:"content"`
}

type wireRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    []wireBlock `json:"system"`
	Messages  []struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	} `json:"messages"`
}

func send(t *testing.T, req llm.Request) (wireRequest, llmtest.RecordedRequest) {
	t.Helper()
	srv := llmtest.NewAnthropic(t, llmtest.Text("ok"))
	if _, err := newClient(t, srv.Config(model)).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	rec := srv.Requests()[0]
	var w wireRequest
	if err := rec.Decode(&w); err != nil {
		t.Fatal(err)
	}
	return w, rec
}

func types(blocks []wireBlock) []string {
	var ts []string
	for _, b := range blocks {
		ts = append(ts, b.Type)
	}
	return ts
}

func TestRolesAlternate(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: text("first")},
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("second"), llm.ImagePart("https://example.com/a.png")}},
		{Role: llm.RoleAssistant, Parts: text("Two calls."), ToolCalls: []llm.ToolCall{
			{ID: "t1", Name: "terminal", Arguments: `{"command":"ls"}`},
			{ID: "t2", Name: "file_editor", Arguments: `{"path":`}, // malformed
		}},
		{Role: llm.RoleTool, ToolCallID: "t1", Parts: text("a.txt")},
		{Role: llm.RoleTool, ToolCallID: "t2", Parts: []llm.Part{llm.TextPart("shown"), llm.ImagePart("data:image/png;base64,AAAA")}},
		{Role: llm.RoleUser, Parts: text("and then?")},
		{Role: llm.RoleAssistant, Parts: text("x")},
		{Role: llm.RoleAssistant, Parts: text("")}, // empty: dropped
		{Role: llm.RoleAssistant, Parts: text("y"), ToolCalls: []llm.ToolCall{{ID: "t3", Name: "think", Arguments: `{}`}}},
		{Role: llm.RoleTool, ToolCallID: "t3", Parts: text("")},
	}}
	w, _ := send(t, req)

	var roles []string
	var blocks [][]string
	for _, m := range w.Messages {
		roles = append(roles, m.Role)
		blocks = append(blocks, types(m.Content))
	}
	if want := []string{"user", "assistant", "user", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	wantBlocks := [][]string{
		{"text", "text", "image"},
		{"text", "tool_use", "tool_use"},
		{"tool_result", "tool_result", "text"},
		{"text", "text", "tool_use"},
		{"tool_result"},
	}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("blocks %v, want %v", blocks, wantBlocks)
	}
	calls := w.Messages[1].Content
	if calls[1].ID != "t1" || calls[1].Name != "terminal" || !llmtest.JSONEqual(calls[1].Input, []byte(`{"command":"ls"}`)) {
		t.Errorf("tool_use %+v", calls[1])
	}
	if string(calls[2].Input) != `{}` {
		t.Errorf("malformed arguments sent as %s, want {}", calls[2].Input)
	}
	results := w.Messages[2].Content
	if results[0].ToolUseID != "t1" || results[1].ToolUseID != "t2" {
		t.Errorf("tool results for %q, %q; want t1, t2", results[0].ToolUseID, results[1].ToolUseID)
	}
	if got := types(results[1].Content); !reflect.DeepEqual(got, []string{"text", "image"}) {
		t.Errorf("second tool result holds %v, want text and image", got)
	}
	if img := results[1].Content[1].Source; img == nil || img.Type != "base64" || img.MediaType != "image/png" || img.Data != "AAAA" {
		t.Errorf("tool result image source %+v", img)
	}
	if len(w.Messages[4].Content[0].Content) != 0 {
		t.Errorf("empty tool result carries %+v, want no content", w.Messages[4].Content[0].Content)
	}
}

func TestImageSources(t *testing.T) {
	w, _ := send(t, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		llm.ImagePart("https://example.com/cat.jpg"),
		llm.ImagePart("data:image/webp;base64,UklGRg=="),
	}}}})
	got := w.Messages[0].Content
	if len(got) != 2 {
		t.Fatalf("blocks %+v", got)
	}
	if s := got[0].Source; got[0].Type != "image" || s == nil || s.Type != "url" || s.URL != "https://example.com/cat.jpg" {
		t.Errorf("URL image %+v", got[0])
	}
	if s := got[1].Source; got[1].Type != "image" || s == nil || s.Type != "base64" || s.MediaType != "image/webp" || s.Data != "UklGRg==" {
		t.Errorf("data image %+v", got[1])
	}
}

func TestSystemAndDefaults(t *testing.T) {
	w, rec := send(t, llm.Request{System: "You are agentd.", Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: text("hi")},
		{Role: llm.RoleSystem, Parts: text("Late instructions.")},
	}})
	if got := types(w.System); !reflect.DeepEqual(got, []string{"text", "text"}) || w.System[0].Text != "You are agentd." || w.System[1].Text != "Late instructions." {
		t.Errorf("system %+v", w.System)
	}
	for _, m := range w.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			t.Errorf("message with role %q", m.Role)
		}
	}
	if w.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("max_tokens %d, want %d", w.MaxTokens, anthropic.DefaultMaxTokens)
	}
	if rec.Header.Get("Anthropic-Version") == "" || rec.Header.Get("X-Api-Key") != llmtest.APIKey || rec.Header.Get("Authorization") != "" {
		t.Errorf("headers: anthropic-version %q, x-api-key %q, authorization %q",
			rec.Header.Get("Anthropic-Version"), rec.Header.Get("X-Api-Key"), rec.Header.Get("Authorization"))
	}
}

func TestStopReasons(t *testing.T) {
	for _, tc := range []struct{ stop, want string }{
		{"end_turn", llm.FinishStop},
		{"stop_sequence", llm.FinishStop},
		{"tool_use", llm.FinishToolCalls},
		{"max_tokens", llm.FinishLength},
		{"refusal", llm.FinishContentFilter},
		{"pause_turn", "pause_turn"},
	} {
		srv := llmtest.NewAnthropic(t, llmtest.Step{Reply: &llmtest.Reply{Text: "x", FinishReason: tc.stop}})
		resp, err := newClient(t, srv.Config(model)).Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: text("hi")}}})
		if err != nil || resp.FinishReason != tc.want {
			t.Errorf("stop reason %q: finish %q, %v; want %q", tc.stop, resp.FinishReason, err, tc.want)
		}
	}
}

func TestOverloadedIsRetried(t *testing.T) {
	srv := llmtest.NewAnthropic(t, llmtest.Fail(529, "Overloaded"), llmtest.Text("ok"))
	policy := llm.RetryPolicy{Sleep: func(ctx context.Context, _ time.Duration) error { return nil }}
	resp, err := llm.WithRetry(newClient(t, srv.Config(model)), policy).Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: text("hi")}}})
	if err != nil || resp.Message.Text() != "ok" || len(srv.Requests()) != 2 {
		t.Errorf("%q, %v after %d requests; want ok after 2", resp.Message.Text(), err, len(srv.Requests()))
	}
}

func TestModelNamesAndBaseURL(t *testing.T) {
	for _, tc := range []struct {
		name          string
		provider      string
		model, want   string
		baseURLSuffix string
	}{
		{"routing prefix stripped", "", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", ""},
		{"inferred from the name", "", "claude-haiku-4-5", "claude-haiku-4-5", ""},
		{"base URL with /v1", llm.ProviderAnthropic, model, model, "/v1"},
		{"base URL with /v1/", llm.ProviderAnthropic, model, model, "/v1/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, llmtest.Text("ok"))
			cfg := srv.Config(tc.model)
			cfg.Provider = tc.provider
			cfg.BaseURL += tc.baseURLSuffix
			if _, err := newClient(t, cfg).Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: text("hi")}}}); err != nil {
				t.Fatal(err)
			}
			if got := srv.Requests()[0]; got.Model != tc.want || got.Path != "/v1/messages" {
				t.Errorf("server got model %q at %s, want %q at /v1/messages", got.Model, got.Path, tc.want)
			}
		})
	}
}

func TestInvalidRequestsAreNotSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  llm.Request
	}{
		{"image URL scheme", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.ImagePart("file:///etc/passwd")}}}}},
		{"data URL not base64", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.ImagePart("data:image/png,raw")}}}}},
		{"tool parameters", llm.Request{Tools: []llm.ToolSpec{{Name: "x", Parameters: json.RawMessage(`"object"`)}}}},
		{"tool result without id", llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Parts: text("r")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t)
			_, err := newClient(t, srv.Config(model)).Complete(context.Background(), tc.req)
			var e *llm.Error
			if !errors.As(err, &e) || e.Kind != llm.KindBadRequest || len(srv.Requests()) != 0 {
				t.Errorf("error %v, %d requests; want KindBadRequest and nothing sent", err, len(srv.Requests()))
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	for _, cfg := range []llm.Config{
		{Model: "gpt-4o"},
		{Provider: llm.ProviderAnthropic},
		{Model: model, BaseURL: "api.anthropic.com"},
	} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
