package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/settings"
)

// Every event is masked for the secrets its conversation knows before it is stored or
// published: the LLM key it runs with (the user's or the server's), the user's other secret
// settings and MCP keys, their provider tokens and custom secrets, the MCP keys and secrets of
// its own request, and its sandbox's session key. A command that prints a token therefore shows it to nobody, the
// model included: the model reads the masked observations back from the log.

// SecretSource lists secret values that a user's conversations may come across.
type SecretSource interface {
	SecretValues(ctx context.Context, userID string) ([]string, error)
}

// redactors caches one redactor per conversation. An entry is good while its owner's secrets
// have not changed and the conversation's sandbox is the one it was built with. The revision
// of the owner's secrets is the store's (Store.SecretsRevision), which every replica bumps
// when a secret changes through it (SecretsChanged), and every record checks it: the agent's
// records (recordWith) in the store's own transaction, under the conversation's lock, so
// that a record masked for an older revision fails and is masked again; the others by
// reading it first. A secret changed through one replica is thus masked in what any replica
// records from then on.
type redactors struct {
	mu     sync.Mutex
	byConv map[string]redactorEntry
	bytes  int // the secrets' bytes that the entries hold (secret.Redactor.Size)
}

type redactorEntry struct {
	owner     string
	rev       int64
	sandboxID string
	r         *secret.Redactor
}

// maxCachedRedactors and maxRedactorBytes bound the cache; past either, the cache starts
// over. Each redactor holds its conversation's secrets, its owner's included, so a user with
// large secrets and many conversations would otherwise fill the memory.
const (
	maxCachedRedactors = 10_000
	maxRedactorBytes   = 64 << 20
)

// put caches e as the redactor of conversation id, first emptying the cache if e would take
// it past its bounds.
func (c *redactors) put(id string, e redactorEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := e.r.Size()
	c.forgetLocked(id)
	if c.byConv == nil || len(c.byConv) >= maxCachedRedactors || c.bytes+size > maxRedactorBytes {
		c.byConv, c.bytes = map[string]redactorEntry{}, 0
	}
	c.byConv[id] = e
	c.bytes += size
}

// forgetOwner forgets the entries of the conversations of owner.
func (c *redactors) forgetOwner(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, e := range c.byConv {
		if e.owner == owner {
			c.forgetLocked(id)
		}
	}
}

// forget forgets the entry of conversation id.
func (c *redactors) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(id)
}

func (c *redactors) forgetLocked(id string) {
	if e, ok := c.byConv[id]; ok {
		delete(c.byConv, id)
		c.bytes -= e.r.Size()
	}
}

// SecretsChanged tells the service, and through the store every replica, that a user's
// secrets (settings, provider tokens, custom secrets) changed: their conversations mask the
// new values from their next event on. A revision the store does not take empties this
// replica's cache, at least.
func (s *Service) SecretsChanged(userID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.o.Store.BumpSecretsRevision(ctx, userID); err != nil {
		s.log.Error("the other replicas may mask a user's changed secret late", "user_id", userID, "err", err)
	}
	s.red.forgetOwner(userID)
}

// redactor returns the redactor of conversation v and the revision of its owner's secrets
// it was built for. With check, it reads the revision from the store and builds the redactor
// anew when it moved; without, a cached redactor is taken as it is, and the caller makes its
// record conditional on the revision (StateUpdate.IfSecretsRevision), which the store checks
// without a round trip of its own.
func (s *Service) redactor(ctx context.Context, v Conversation, check bool) (*secret.Redactor, int64, error) {
	s.red.mu.Lock()
	e, ok := s.red.byConv[v.ID]
	s.red.mu.Unlock()
	ok = ok && e.owner == v.OwnerID && e.sandboxID == v.SandboxID
	if ok && !check {
		return e.r, e.rev, nil
	}
	rev, err := s.o.Store.SecretsRevision(ctx, v.OwnerID)
	if err != nil {
		return nil, 0, err
	}
	if ok && e.rev == rev {
		return e.r, rev, nil
	}
	values, err := s.secretValues(ctx, s.latest(ctx, v))
	if err != nil {
		return nil, 0, err
	}
	r := secret.NewRedactor(values...)
	s.red.put(v.ID, redactorEntry{owner: v.OwnerID, rev: rev, sandboxID: v.SandboxID, r: r})
	return r, rev, nil
}

// latest is v as the store has it now, or v itself before it is stored: the secrets given to
// a conversation since v was read (AddSecrets) are masked too.
func (s *Service) latest(ctx context.Context, v Conversation) Conversation {
	cur, err := s.o.Store.GetConversation(ctx, v.OwnerID, v.ID)
	if err != nil {
		return v
	}
	return cur.Conversation
}

// ReleaseMemory empties the cache of redactors, which keeps the secrets of every conversation
// that ran lately: once no agent runs, they are built again as events come.
func (s *Service) ReleaseMemory() {
	s.red.mu.Lock()
	defer s.red.mu.Unlock()
	s.red.byConv, s.red.bytes = nil, 0
}

// forgetRedactor drops the cached redactor of a deleted conversation.
func (s *Service) forgetRedactor(convID string) {
	s.red.forget(convID)
}

// secretValues collects the secrets conversation v knows.
func (s *Service) secretValues(ctx context.Context, v Conversation) ([]string, error) {
	values := []string{s.o.LLM.APIKey}
	for _, src := range s.o.Secrets {
		vs, err := src.SecretValues(ctx, v.OwnerID)
		if err != nil {
			return nil, fmt.Errorf("secrets of conversation %s: %w", v.ID, err)
		}
		values = append(values, vs...)
	}
	if len(v.RequestSealed) > 0 {
		raw, err := s.o.Sealer.Open(v.RequestSealed)
		if err != nil {
			return nil, fmt.Errorf("secrets of conversation %s: open its request: %w", v.ID, err)
		}
		var req struct {
			MCPConfig *settings.MCPConfig `json:"mcp_config"`
		}
		_ = json.Unmarshal(raw, &req) // validated when stored; a request without MCP has none
		values = append(values, req.MCPConfig.SecretValues()...)
	}
	inline, err := s.inlineSecrets(v)
	if err != nil {
		return nil, err
	}
	for _, val := range inline {
		values = append(values, val)
	}
	if v.SandboxID != "" {
		// The session key is masked where it can be read; a sandbox that is gone has none to
		// leak, so its absence is no reason to refuse the event.
		key, err := s.o.Sandboxes.SessionKey(ctx, v.OwnerID, v.SandboxID)
		switch {
		case err == nil:
			values = append(values, key)
		case !errors.Is(err, sandbox.ErrNotFound):
			s.log.Warn("session key of the conversation's sandbox is not masked", "conversation_id", v.ID, "sandbox_id", v.SandboxID, "err", err)
		}
	}
	return values, nil
}

// redact masks the secrets of conversation v in evs, in place, with the owner's secrets as
// the store has them now.
func (s *Service) redact(ctx context.Context, v Conversation, evs []event.Event) error {
	_, err := s.redactAt(ctx, v, evs, true)
	return err
}

// redactAt masks the secrets of conversation v in evs, in place, and returns the revision of
// the owner's secrets it masked them for; without check, that of the cached redactor, which
// the caller's record must then be conditional on (see redactor).
func (s *Service) redactAt(ctx context.Context, v Conversation, evs []event.Event, check bool) (int64, error) {
	r, rev, err := s.redactor(ctx, v, check)
	if err != nil {
		return 0, err
	}
	if r.Empty() {
		return rev, nil
	}
	for i := range evs {
		evs[i].Body = r.RedactJSON(evs[i].Body)
		evs[i].LLMText = r.Redact(evs[i].LLMText)
	}
	return rev, nil
}
