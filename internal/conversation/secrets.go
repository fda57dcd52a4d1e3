package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
)

// A conversation names the secrets its agent may use: its owner's stored custom secrets, and
// values its start request gave inline. The conversation keeps the names, and the inline
// values sealed; stored values stay in the secret store and are read when a command runs, so
// that a changed value reaches the next command and a deleted secret none. The terminal's
// commands get them as environment variables, and every event masks them.

// CustomSecrets are the users' stored secrets.
type CustomSecrets interface {
	// Lookup returns the user's secrets with those names, in that order; names the user has
	// no secret for are left out.
	Lookup(ctx context.Context, userID string, names []string) ([]customsecret.Plain, error)
}

// secretsOf checks the secrets a create request names and returns the conversation's names
// and its sealed inline values.
func (s *Service) secretsOf(ctx context.Context, ownerID string, r CreateRequest) ([]string, []byte, error) {
	names := slices.Clone(r.SecretNames)
	for _, name := range slices.Sorted(maps.Keys(r.InlineSecrets)) {
		if err := secretProblem(name, customsecret.CheckName(name), customsecret.CheckValue(r.InlineSecrets[name])); err != nil {
			return nil, nil, err
		}
		names = append(names, name)
	}
	inline := maps.Clone(r.InlineSecrets)
	if len(r.LookupSecrets) > 0 {
		for _, name := range slices.Sorted(maps.Keys(r.LookupSecrets)) {
			if err := secretProblem(name, customsecret.CheckName(name)); err != nil {
				return nil, nil, err
			}
		}
		if inline == nil {
			inline = map[string]string{}
		}
		byRef, err := s.lookups(ctx, ownerID, r.SandboxID, r.LookupSecrets, inline)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, byRef...)
		names = append(names, slices.Collect(maps.Keys(inline))...)
	}
	stored := slices.DeleteFunc(slices.Clone(r.SecretNames), func(n string) bool { _, inline := inline[n]; return inline })
	if len(stored) > 0 {
		if s.o.CustomSecrets == nil {
			return nil, nil, &FieldError{Field: "secrets", Msg: "this server keeps no secrets"}
		}
		found, err := s.o.CustomSecrets.Lookup(ctx, ownerID, stored)
		if err != nil {
			return nil, nil, fmt.Errorf("create conversation: %w", err)
		}
		var missing []string
		for _, n := range stored {
			if !slices.ContainsFunc(found, func(p customsecret.Plain) bool { return p.Name == n }) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return nil, nil, &FieldError{Field: "secrets", Msg: "no secret named " + strings.Join(missing, ", ") + ": create it with POST /api/v1/secrets first"}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(inline) == 0 {
		return names, nil, nil
	}
	raw, err := json.Marshal(inline)
	if err != nil {
		return nil, nil, fmt.Errorf("create conversation: %w", err)
	}
	sealed, err := s.o.Sealer.Seal(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("create conversation: seal secrets: %w", err)
	}
	return names, sealed, nil
}

// secretProblem words the first problem with an inline secret for the client.
func secretProblem(name string, errs ...error) error {
	for _, err := range errs {
		var ie *customsecret.InvalidError
		if errors.As(err, &ie) {
			if ie.Field == "name" {
				return &FieldError{Field: "secrets", Msg: ie.Msg}
			}
			return &FieldError{Field: "secrets", Msg: "secret " + name + ": " + ie.Msg}
		}
	}
	return nil
}

// inlineSecrets opens the values c's start request gave inline.
func (s *Service) inlineSecrets(c Conversation) (map[string]string, error) {
	if len(c.SecretsSealed) == 0 {
		return nil, nil
	}
	raw, err := s.o.Sealer.Open(c.SecretsSealed)
	if err != nil {
		return nil, fmt.Errorf("secrets of conversation %s: open: %w", c.ID, err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("secrets of conversation %s: %w", c.ID, err)
	}
	return m, nil
}

// Secrets returns the secrets conversation c's agent may use now, by name: the inline ones,
// and those of its owner's stored secrets that still exist.
func (s *Service) Secrets(ctx context.Context, c Conversation) ([]customsecret.Plain, error) {
	if len(c.SecretNames) == 0 {
		return nil, nil
	}
	inline, err := s.inlineSecrets(c)
	if err != nil {
		return nil, err
	}
	var stored []string
	for _, n := range c.SecretNames {
		if _, ok := inline[n]; !ok {
			stored = append(stored, n)
		}
	}
	var found []customsecret.Plain
	if len(stored) > 0 && s.o.CustomSecrets != nil {
		if found, err = s.o.CustomSecrets.Lookup(ctx, c.OwnerID, stored); err != nil {
			return nil, fmt.Errorf("secrets of conversation %s: %w", c.ID, err)
		}
	}
	out := make([]customsecret.Plain, 0, len(c.SecretNames))
	for _, n := range c.SecretNames {
		if v, ok := inline[n]; ok {
			out = append(out, customsecret.Plain{Name: n, Value: v})
		} else if i := slices.IndexFunc(found, func(p customsecret.Plain) bool { return p.Name == n }); i >= 0 {
			out = append(out, found[i])
		}
	}
	return out, nil
}

// currentSecrets is Secrets of c as the store has it now: secrets given since c was read
// (AddSecrets) are among them.
func (s *Service) currentSecrets(ctx context.Context, c Conversation) ([]customsecret.Plain, error) {
	v, err := s.o.Store.GetConversation(ctx, c.OwnerID, c.ID)
	if err != nil {
		return nil, fmt.Errorf("secrets of conversation %s: %w", c.ID, err)
	}
	return s.Secrets(ctx, v.Conversation)
}

// SandboxSecrets returns the secrets that the owner's conversations in the sandbox were
// given, by name; where two give one name differently, the older conversation's holds.
func (s *Service) SandboxSecrets(ctx context.Context, ownerID, sandboxID string) ([]customsecret.Plain, error) {
	f := Filter{SandboxID: sandboxID, IncludeSub: true}
	var convs []View
	for q := (paging.Query{Limit: paging.MaxLimit}); ; {
		vs, next, err := s.o.Store.ListConversations(ctx, ownerID, f, q)
		if err != nil {
			return nil, fmt.Errorf("secrets of sandbox %s: %w", sandboxID, err)
		}
		convs = append(convs, vs...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	byName := map[string]customsecret.Plain{}
	for _, v := range slices.Backward(convs) { // listed newest first
		ps, err := s.Secrets(ctx, v.Conversation)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if _, ok := byName[p.Name]; !ok {
				byName[p.Name] = p
			}
		}
	}
	out := make([]customsecret.Plain, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}
