// Package openai is the llm.Client for OpenAI chat completions and every server that speaks
// the same protocol (vLLM, Ollama, llama.cpp server, OpenRouter, LiteLLM), built on the
// official openai-go SDK. It uses native function calling, sends images as image_url parts,
// and makes one HTTP attempt per call: retries belong to llm.WithRetry.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// DefaultBaseURL is OpenAI's own API.
const DefaultBaseURL = "https://api.openai.com/v1"

// client is an llm.Client for one configured endpoint and model.
type client struct {
	cfg  llm.Config
	chat sdk.ChatCompletionService
	// completionTokens says to send the cap as max_completion_tokens, which OpenAI requires of
	// its reasoning models, rather than max_tokens, which compatible servers understand.
	completionTokens bool
	// encoded are the messages of the last request, as JSON.
	encoded messageCache
	// fields is the JSON of the last request's other fields.
	fields fieldsCache
}

// New returns a client for cfg (after cfg.Resolve), whose provider must be
// llm.ProviderOpenAI. An empty APIKey sends no Authorization header, for local servers.
//
// The SDK reads OPENAI_* environment variables only in its top-level client constructor,
// which New does not use: configuration comes from cfg alone.
func New(cfg llm.Config) (llm.Client, error) {
	cfg = cfg.Resolve()
	if cfg.Provider != llm.ProviderOpenAI {
		return nil, fmt.Errorf("openai: provider is %q, not %q", cfg.Provider, llm.ProviderOpenAI)
	}
	if cfg.Model == "" {
		return nil, errors.New("openai: no model configured")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.Client()),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(cfg.Timeout),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			return llm.LimitResponse(next(r))
		}),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &client{
		cfg:              cfg,
		chat:             sdk.NewChatCompletionService(opts...),
		completionTokens: u.Host == "api.openai.com",
	}, nil
}

func (c *client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	body, err := c.body(req)
	if err != nil {
		return llm.Response{}, err
	}
	var httpResp *http.Response
	out, err := c.chat.New(ctx, sdk.ChatCompletionNewParams{},
		option.WithRequestBody("application/json", body.reader()), option.WithMiddleware(body.sized),
		option.WithResponseInto(&httpResp))
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && apiErr.Response != nil {
			httpResp = apiErr.Response
		}
		return llm.Response{}, llm.CallError(ctx, err, httpResp, c.cfg.APIKey)
	}
	return response(out)
}
