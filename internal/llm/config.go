package llm

import (
	"net/http"
	"strings"
	"time"
)

// Providers: the wire protocol a Client speaks.
const (
	// ProviderOpenAI is OpenAI chat completions, spoken by OpenAI and by every
	// OpenAI-compatible server (vLLM, Ollama, llama.cpp, OpenRouter, LiteLLM).
	ProviderOpenAI = "openai"
	// ProviderAnthropic is Anthropic messages.
	ProviderAnthropic = "anthropic"
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero (OpenHands' default).
const DefaultTimeout = 5 * time.Minute

// Config says which model to call and where.
type Config struct {
	// Provider is ProviderOpenAI or ProviderAnthropic. Empty means Resolve infers it from
	// Model. Set it explicitly for a proxy whose model names carry a vendor prefix, such as
	// OpenRouter's "anthropic/claude-sonnet-4": Provider "openai" sends that name as given.
	Provider string
	// Model is the model name, optionally with a routing prefix (see Resolve).
	Model string
	// BaseURL is the API's address; empty means the provider's public API. For OpenAI-compatible
	// servers it includes the version path ("http://localhost:11434/v1"). For Anthropic it is
	// the root ("https://api.anthropic.com"); a trailing "/v1" is dropped.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer" (OpenAI) or "x-api-key" (Anthropic). Empty
	// sends no credentials, for local servers. It never appears in an error message.
	APIKey string
	// Timeout bounds one HTTP attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient makes the calls; nil means the client of transport. A base URL
	// a user chose gets the client of the outbound URL policy (netpolicy), which refuses
	// internal addresses when it connects.
	HTTPClient *http.Client
}

// Client returns the HTTP client to call the API with.
func (c Config) Client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return defaultClient
}

// maxIdleConnsPerHost is how many idle connections to one provider the clients keep for
// the next calls. Go's default is 2: with more conversations than that calling one provider
// at once, most calls paid a new TCP and TLS handshake.
const maxIdleConnsPerHost = 256

// transport is Go's default transport (proxies from the environment included), keeping
// maxIdleConnsPerHost idle connections per host. Every call to a provider the server's
// configuration names goes through it, so conversations share its connections.
var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	return t
}()

var defaultClient = &http.Client{Transport: transport}

// CloseIdleConnections closes the connections to providers that no call is using, which the
// server-wide transport keeps for the next calls.
func CloseIdleConnections() { transport.CloseIdleConnections() }

// routingPrefixes are the "provider/" prefixes Resolve strips, and the provider each names.
var routingPrefixes = []struct{ prefix, provider string }{
	{"anthropic/", ProviderAnthropic},
	{"openai/", ProviderOpenAI},
	{"litellm_proxy/", ProviderOpenAI}, // OpenHands' name for a LiteLLM proxy
}

// InferProvider returns the provider for a model name: ProviderAnthropic for names that
// start with "claude-" or "anthropic/" (case-insensitive), and ProviderOpenAI for everything
// else, since any other name ("gpt-4o", "openai/gpt-4o", "qwen2.5-coder:7b",
// "meta-llama/Llama-3.1-8B") is served over the OpenAI-compatible protocol.
func InferProvider(model string) string {
	m := strings.ToLower(model)
	for _, r := range routingPrefixes {
		if strings.HasPrefix(m, r.prefix) {
			return r.provider
		}
	}
	if strings.HasPrefix(m, "claude-") {
		return ProviderAnthropic
	}
	return ProviderOpenAI
}

// Resolve fills in the defaults: Timeout, and, when Provider is empty, Provider from
// InferProvider. A routing prefix ("anthropic/", "openai/", "litellm_proxy/") is stripped
// from Model only in that case, so "anthropic/claude-sonnet-4-5" calls Anthropic with model
// "claude-sonnet-4-5". With Provider set, Model is sent exactly as given.
func (c Config) Resolve() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Provider != "" {
		return c
	}
	c.Provider = InferProvider(c.Model)
	m := strings.ToLower(c.Model)
	for _, r := range routingPrefixes {
		if strings.HasPrefix(m, r.prefix) {
			c.Model = c.Model[len(r.prefix):]
			break
		}
	}
	return c
}
