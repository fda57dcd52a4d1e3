package conversation

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/settings"
)

// LLMDefaults are the server-wide LLM settings (AGENTD_LLM_*), used where a user has none.
type LLMDefaults struct {
	// Provider is llm.ProviderOpenAI or llm.ProviderAnthropic; empty infers it from the model.
	// It applies only when the server's base URL is used.
	Provider string
	Model    string
	BaseURL  string
	APIKey   string
}

// UserSettings is what the conversation service reads of a user's settings.
type UserSettings interface {
	Get(ctx context.Context, userID string) (settings.View, error)
	Secret(ctx context.Context, userID, name string) (value string, ok bool, err error)
}

// NoLLMError says why a user has no usable LLM settings. It is ErrNoLLM.
type NoLLMError struct{ Missing string }

func (e *NoLLMError) Error() string { return ErrNoLLM.Error() + ": " + e.Missing }

// Is makes errors.Is(err, ErrNoLLM) hold.
func (e *NoLLMError) Is(target error) bool { return target == ErrNoLLM }

// ClientMessage is the answer clients get.
func (e *NoLLMError) ClientMessage() string {
	return "No usable LLM settings: " + e.Missing + ". Set llm_model and llm_api_key (and llm_base_url for a " +
		"self-hosted or proxy endpoint) with POST /api/settings, or ask the administrator to set " +
		"AGENTD_LLM_MODEL and AGENTD_LLM_API_KEY."
}

// resolveLLM picks the LLM for a conversation of ownerID: the model named by the
// conversation (llm_model of the start request), else the user's, else the server's. A user
// who set a base URL gets only their own key with it (the server's key is never sent to an
// endpoint a user chose), and reaches it through the client of the URL policy for that user
// (Options.UserHTTP). Without a model, or without a key for a public API (no base URL),
// the answer is a *NoLLMError. The user's settings come back too: beside the LLM they tune
// the agent (max_iterations, condenser_max_size, enable_default_condenser,
// max_budget_per_task).
func (s *Service) resolveLLM(ctx context.Context, ownerID string, model *string) (llm.Config, settings.Settings, error) {
	var user settings.Settings
	if s.o.Settings != nil {
		v, err := s.o.Settings.Get(ctx, ownerID)
		if err != nil && !errors.Is(err, settings.ErrNotFound) {
			return llm.Config{}, user, fmt.Errorf("read LLM settings: %w", err)
		}
		user = v.Settings
	}
	userModel, userBase := trimmed(user.LLMModel), trimmed(user.LLMBaseURL)
	userKey := ""
	if s.o.Settings != nil {
		k, ok, err := s.o.Settings.Secret(ctx, ownerID, settings.LLMAPIKey)
		if err != nil {
			return llm.Config{}, user, fmt.Errorf("read LLM settings: %w", err)
		}
		if ok {
			userKey = k
		}
	}
	d := s.o.LLM
	cfg := llm.Config{Model: firstNonEmpty(userModel, d.Model)}
	if model != nil && strings.TrimSpace(*model) != "" {
		cfg.Model = strings.TrimSpace(*model)
	}
	if userBase != "" {
		cfg.BaseURL, cfg.APIKey = userBase, userKey
		// The user's own URL is reached only as the URL policy allows them; the server's is
		// the administrator's choice.
		client, err := s.o.UserHTTP(ctx, ownerID)
		if err != nil {
			return llm.Config{}, user, fmt.Errorf("read LLM settings: %w", err)
		}
		cfg.HTTPClient = client
	} else {
		cfg.BaseURL, cfg.APIKey, cfg.Provider = d.BaseURL, firstNonEmpty(userKey, d.APIKey), d.Provider
	}
	switch {
	case cfg.Model == "":
		return cfg, user, &NoLLMError{Missing: "no model is set"}
	case cfg.APIKey == "" && cfg.BaseURL == "":
		return cfg, user, &NoLLMError{Missing: "no API key is set for model " + cfg.Model}
	}
	return cfg, user, nil
}

func trimmed(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// checkStatedLLM checks the LLM key and base URL a client states for a conversation of
// ownerID against the owner's LLM settings, which its agent runs with: a stated key or URL
// the settings do not have would silently not be used. Neither is ever quoted.
func (s *Service) checkStatedLLM(ctx context.Context, ownerID string, key, baseURL *string) error {
	if trimmed(key) == "" && trimmed(baseURL) == "" {
		return nil
	}
	var user settings.Settings
	ownKey := ""
	if s.o.Settings != nil {
		v, err := s.o.Settings.Get(ctx, ownerID)
		if err != nil && !errors.Is(err, settings.ErrNotFound) {
			return fmt.Errorf("read LLM settings: %w", err)
		}
		user = v.Settings
		if k, ok, err := s.o.Settings.Secret(ctx, ownerID, settings.LLMAPIKey); err != nil {
			return fmt.Errorf("read LLM settings: %w", err)
		} else if ok {
			ownKey = k
		}
	}
	const how = "agentd runs the agent with the LLM of your settings: save it there (POST /api/v1/settings) or send none"
	if k := trimmed(key); k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(ownKey)) != 1 {
		return &FieldError{Field: "agent.llm.api_key", Msg: "not the API key of your LLM settings; " + how}
	}
	if u := trimmed(baseURL); u != "" && strings.TrimRight(u, "/") != strings.TrimRight(trimmed(user.LLMBaseURL), "/") {
		return &FieldError{Field: "agent.llm.base_url", Msg: "not the base URL of your LLM settings; " + how}
	}
	return nil
}
