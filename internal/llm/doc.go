// Package llm is agentd's language-model layer: provider-neutral messages, tool specs and
// usage, the Client interface the agent loop calls, the retry policy, and token cost and
// metrics accounting.
//
// The adapters live below it, one per wire protocol, each built on its vendor's official Go
// SDK: llm/openai (OpenAI chat completions, and every OpenAI-compatible server: vLLM, Ollama,
// llama.cpp, OpenRouter, LiteLLM) and llm/anthropic (Anthropic messages). This package
// imports neither SDK. The one place that picks an adapter (cmd/agentd) does so from
// Config.Provider:
//
//	cfg = cfg.Resolve()
//	var c llm.Client
//	switch cfg.Provider {
//	case llm.ProviderAnthropic:
//		c, err = anthropic.New(cfg)
//	default:
//		c, err = openai.New(cfg)
//	}
//	c = llm.WithRetry(c, llm.RetryPolicy{})
//
// Adapters make exactly one HTTP attempt per Complete call (the SDKs' own retries are
// off), so WithRetry is the only retry policy in effect.
package llm
