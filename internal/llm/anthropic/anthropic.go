// Package anthropic is the llm.Client for Anthropic's messages API, built on the official
// anthropic-sdk-go SDK. It uses native tool use, sends images as URL or base64 image blocks,
// merges consecutive messages of one role as the API requires, and makes one HTTP attempt
// per call: retries belong to llm.WithRetry.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// DefaultBaseURL is Anthropic's own API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the reply cap sent when a request sets none; the API requires one.
const DefaultMaxTokens = 8192

// client is an llm.Client for one configured endpoint and model.
type client struct {
	cfg      llm.Config
	messages sdk.MessageService
}

// New returns a client for cfg (after cfg.Resolve), whose provider must be
// llm.ProviderAnthropic. BaseURL is the API's root; a trailing "/v1" is dropped. An empty
// APIKey sends no x-api-key header. The SDK's environment defaults (ANTHROPIC_API_KEY,
// profiles, ANTHROPIC_BASE_URL) are switched off: configuration comes from cfg alone.
func New(cfg llm.Config) (llm.Client, error) {
	cfg = cfg.Resolve()
	if cfg.Provider != llm.ProviderAnthropic {
		return nil, fmt.Errorf("anthropic: provider is %q, not %q", cfg.Provider, llm.ProviderAnthropic)
	}
	if cfg.Model == "" {
		return nil, errors.New("anthropic: no model configured")
	}
	base := strings.TrimSuffix(strings.TrimSuffix(cfg.BaseURL, "/"), "/v1")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	cfg.BaseURL = base
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
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
	return &client{cfg: cfg, messages: sdk.NewClient(opts...).Messages}, nil
}

func (c *client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := c.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	var httpResp *http.Response
	out, err := c.messages.New(ctx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) && apiErr.Response != nil {
			httpResp = apiErr.Response
		}
		return llm.Response{}, llm.CallError(ctx, err, httpResp, c.cfg.APIKey)
	}
	return response(out), nil
}
