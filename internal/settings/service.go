package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/secret"
)

// Names of the secret settings. They are sealed at rest and never returned.
const (
	LLMAPIKey     = "llm_api_key"
	SearchAPIKey  = "search_api_key"
	SandboxAPIKey = "sandbox_api_key"
)

// Service reads and merges users' settings. Safe for concurrent use.
type Service struct {
	store  Store
	sealer secret.Sealer
	now    func() time.Time
	// changed is told the user whose secret settings changed; see OnSecretsChange.
	changed func(userID string)
	// mu makes each read-modify-write of a record whole, so that concurrent changes of one
	// user's settings and profiles do not lose each other.
	mu sync.Mutex
}

// OnSecretsChange registers fn to be called after a user's secret settings may have changed
// (those that mask event text: see SecretValues). Call it before the service is used.
func (s *Service) OnSecretsChange(fn func(userID string)) { s.changed = fn }

// NewService returns a Service. now may be nil.
func NewService(store Store, sealer secret.Sealer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, sealer: sealer, now: now}
}

// Update changes some of a user's settings. Nil fields keep their stored value.
type Update struct {
	Settings
	// The secret settings; an empty string clears one.
	LLMAPIKey     *string
	SearchAPIKey  *string
	SandboxAPIKey *string
	// MCP replaces the MCP configuration. A server sent without an API key keeps the key
	// stored for the same kind of server at the same URL.
	MCP *MCPConfig
}

// View is a user's settings as they may be shown: no secret is in it.
type View struct {
	Settings
	// MCP is the MCP configuration with the servers' API keys left out; nil when none is
	// stored.
	MCP              *MCPConfig
	LLMAPIKeySet     bool
	SearchAPIKeySet  bool
	SandboxAPIKeySet bool
	UpdatedAt        time.Time
}

// Get returns the user's settings; ErrNotFound when none were ever stored, a *CorruptError
// when a stored value cannot be read as its setting's type.
func (s *Service) Get(ctx context.Context, userID string) (View, error) {
	r, err := s.store.GetSettings(ctx, userID)
	if err != nil {
		return View{}, err
	}
	v := View{UpdatedAt: r.UpdatedAt}
	if v.Settings, err = decodeValues(r.Values); err != nil {
		return View{}, fmt.Errorf("get settings of %s: %w", userID, err)
	}
	if v.MCP, err = s.openMCP(r); err != nil {
		return View{}, fmt.Errorf("get settings of %s: %w", userID, err)
	}
	if v.MCP != nil {
		v.MCP.dropKeys()
	}
	_, v.LLMAPIKeySet = r.Secrets[LLMAPIKey]
	_, v.SearchAPIKeySet = r.Secrets[SearchAPIKey]
	_, v.SandboxAPIKeySet = r.Secrets[SandboxAPIKey]
	return v, nil
}

// Apply merges u into the user's stored settings in one write. A stored value that cannot be
// read fails it with a *CorruptError, unless u replaces that value.
func (s *Service) Apply(ctx context.Context, userID string, u Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		r = Record{UserID: userID}
	} else if err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	before, _ := decodeValues(r.Values) // a stored value u replaces may be unreadable
	if r.Values, err = mergeValues(r.Values, u.Settings); err != nil {
		return fmt.Errorf("update settings of %s: %w", userID, err)
	}
	after, err := decodeValues(r.Values)
	if err != nil {
		return fmt.Errorf("update settings of %s: %w", userID, err)
	}
	if r.Secrets == nil {
		r.Secrets = map[string][]byte{}
	}
	changed, err := s.llmChanged(r, before, after, u.LLMAPIKey)
	if err != nil {
		return fmt.Errorf("update settings of %s: %w", userID, err)
	}
	if changed {
		// The active profile no longer says what runs.
		if err := s.deactivateProfile(&r); err != nil {
			return fmt.Errorf("update settings of %s: %w", userID, err)
		}
	}
	for name, val := range map[string]*string{LLMAPIKey: u.LLMAPIKey, SearchAPIKey: u.SearchAPIKey, SandboxAPIKey: u.SandboxAPIKey} {
		switch {
		case val == nil:
		case *val == "":
			delete(r.Secrets, name)
		default:
			if err := s.seal(r.Secrets, name, []byte(*val)); err != nil {
				return fmt.Errorf("update settings: %w", err)
			}
		}
	}
	if u.MCP != nil {
		old, err := s.openMCP(r)
		if err != nil {
			return fmt.Errorf("update settings of %s: %w", userID, err)
		}
		m := *u.MCP // keepKeys writes to the servers, which are the caller's
		m.SSEServers, m.SHTTPServers = slices.Clone(m.SSEServers), slices.Clone(m.SHTTPServers)
		m.keepKeys(old)
		plain, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("update settings: %w", err)
		}
		if err := s.seal(r.Secrets, mcpSecret, plain); err != nil {
			return fmt.Errorf("update settings: %w", err)
		}
	}
	r.UpdatedAt = s.now().UTC()
	if err := s.store.PutSettings(ctx, r); err != nil {
		return fmt.Errorf("update settings: %w", err)
	}
	if s.changed != nil && (u.LLMAPIKey != nil || u.SearchAPIKey != nil || u.SandboxAPIKey != nil || u.MCP != nil) {
		s.changed(userID)
	}
	return nil
}

// SecretValues returns every secret value of the user's settings: the LLM, search and
// sandbox API keys, and the API keys and environment values of their MCP servers. The
// conversations mask them in what they record.
func (s *Service) SecretValues(ctx context.Context, userID string) ([]string, error) {
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret settings of %s: %w", userID, err)
	}
	var out []string
	for _, name := range []string{LLMAPIKey, SearchAPIKey, SandboxAPIKey} {
		sealed, ok := r.Secrets[name]
		if !ok {
			continue
		}
		plain, err := s.sealer.Open(sealed)
		if err != nil {
			return nil, fmt.Errorf("secret settings of %s: open %s: %w", userID, name, err)
		}
		out = append(out, string(plain))
	}
	for name, sealed := range r.Secrets {
		if !strings.HasPrefix(name, profileSecret("")) {
			continue
		}
		plain, err := s.sealer.Open(sealed)
		if err != nil {
			return nil, fmt.Errorf("secret settings of %s: open %s: %w", userID, name, err)
		}
		out = append(out, string(plain))
	}
	m, err := s.openMCP(r)
	if err != nil {
		return nil, fmt.Errorf("secret settings of %s: %w", userID, err)
	}
	return append(out, m.SecretValues()...), nil
}

// Secret returns one of the user's secret settings; ok is false when it is not set.
func (s *Service) Secret(ctx context.Context, userID, name string) (value string, ok bool, err error) {
	r, err := s.store.GetSettings(ctx, userID)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read secret setting: %w", err)
	}
	sealed, ok := r.Secrets[name]
	if !ok {
		return "", false, nil
	}
	plain, err := s.sealer.Open(sealed)
	if err != nil {
		return "", false, fmt.Errorf("open secret setting %s: %w", name, err)
	}
	return string(plain), true, nil
}

func (s *Service) seal(secrets map[string][]byte, name string, plain []byte) error {
	sealed, err := s.sealer.Seal(plain)
	if err != nil {
		return fmt.Errorf("seal %s: %w", name, err)
	}
	secrets[name] = sealed
	return nil
}

// openMCP returns the MCP configuration of r, with its keys, or nil when r has none.
func (s *Service) openMCP(r Record) (*MCPConfig, error) {
	sealed, ok := r.Secrets[mcpSecret]
	if !ok {
		return nil, nil
	}
	plain, err := s.sealer.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", mcpSecret, err)
	}
	return decodeMCP(plain)
}
