package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentd/agentd/internal/customsecret"
)

// More secrets for a conversation that has started, as OpenHands' SDK gives them through its
// agent server (RemoteConversation's secrets, update_secrets). They join those the start
// request named, kept the same way: names with the conversation, inline values sealed beside
// them, so that they reach the agent's commands and are masked in every event as the start's
// are.

// SecretsUpdate gives a conversation secrets by name: values given inline, and lookups, each
// naming a secret that the conversations of the conversation's sandbox were given already
// (what the sandbox's agent server lists at /api/settings/secrets, and OpenHands' SDK turns
// into LookupSecrets).
type SecretsUpdate struct {
	Inline map[string]string
	// Lookups maps a name to the name of the sandbox's secret it takes.
	Lookups map[string]string
}

// AddSecrets gives the owner's conversation the secrets of u; a name the conversation has
// already takes the new value. A lookup takes the sandbox's secret as the conversations that
// were given it have it: the owner's stored secret of that name by reference (a changed
// value reaches the next command), any other by its value. Every event masks them from the
// next one on, and the terminal's next command gets them.
func (s *Service) AddSecrets(ctx context.Context, ownerID, convID string, u SecretsUpdate) error {
	for _, name := range slices.Sorted(maps.Keys(u.Inline)) {
		if err := secretProblem(name, customsecret.CheckName(name), customsecret.CheckValue(u.Inline[name])); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(u.Lookups)) {
		if err := secretProblem(name, customsecret.CheckName(name)); err != nil {
			return err
		}
	}
	if len(u.Inline) == 0 && len(u.Lookups) == 0 {
		_, err := s.o.Store.GetConversation(ctx, ownerID, convID)
		return err
	}
	for attempt := 1; ; attempt++ {
		v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
		if err != nil {
			return err
		}
		from := SecretSet{Names: v.SecretNames, Sealed: v.SecretsSealed}
		to, err := s.withSecrets(ctx, v, u)
		if err != nil {
			return err
		}
		err = s.o.Store.SetConversationSecrets(ctx, ownerID, convID, from, to, s.o.Now().UTC())
		if errors.Is(err, ErrSecretsChanged) && attempt < maxStatusRetries {
			continue
		}
		if err != nil {
			return err
		}
		// The owner's conversations mask the new values from their next event on, on every
		// replica.
		s.SecretsChanged(ownerID)
		return nil
	}
}

// withSecrets returns v's secrets with those of u added.
func (s *Service) withSecrets(ctx context.Context, v View, u SecretsUpdate) (SecretSet, error) {
	inline, err := s.inlineSecrets(v.Conversation)
	if err != nil {
		return SecretSet{}, err
	}
	if inline == nil {
		inline = map[string]string{}
	}
	names := slices.Clone(v.SecretNames)
	stored, err := s.lookups(ctx, v.OwnerID, v.SandboxID, u.Lookups, inline)
	if err != nil {
		return SecretSet{}, err
	}
	for _, name := range stored {
		delete(inline, name) // a stored secret by reference now
		names = append(names, name)
	}
	for name, value := range u.Inline {
		inline[name] = value
	}
	names = append(names, slices.Collect(maps.Keys(inline))...)
	slices.Sort(names)
	out := SecretSet{Names: slices.Compact(names)}
	if len(inline) == 0 {
		return out, nil
	}
	raw, err := json.Marshal(inline)
	if err != nil {
		return SecretSet{}, err
	}
	if out.Sealed, err = s.o.Sealer.Seal(raw); err != nil {
		return SecretSet{}, fmt.Errorf("seal the secrets of conversation %s: %w", v.ID, err)
	}
	return out, nil
}

// lookups resolves lookups (name to the name of a secret of the owner's sandbox) among the
// secrets of the sandbox: a name that takes the owner's stored secret of the same name is
// returned, to be kept by reference; any other is added to inline with its value.
func (s *Service) lookups(ctx context.Context, ownerID, sandboxID string, lookups map[string]string, inline map[string]string) ([]string, error) {
	if len(lookups) == 0 {
		return nil, nil
	}
	if sandboxID == "" {
		return nil, &FieldError{Field: "secrets", Msg: "the conversation has no sandbox yet, so no secret of its sandbox can be looked up"}
	}
	given, err := s.SandboxSecrets(ctx, ownerID, sandboxID)
	if err != nil {
		return nil, err
	}
	var stored []string
	for _, name := range slices.Sorted(maps.Keys(lookups)) {
		src := lookups[name]
		i := slices.IndexFunc(given, func(p customsecret.Plain) bool { return p.Name == src })
		if i < 0 {
			return nil, &FieldError{Field: "secrets", Msg: "secret " + name + ": its LookupSecret names " + src +
				", which the conversations of this sandbox were not given (GET /api/settings/secrets lists those)"}
		}
		if name == src && s.o.CustomSecrets != nil {
			own, err := s.o.CustomSecrets.Lookup(ctx, ownerID, []string{src})
			if err != nil {
				return nil, fmt.Errorf("secrets of sandbox %s: %w", sandboxID, err)
			}
			if len(own) == 1 && own[0].Value == given[i].Value {
				stored = append(stored, name)
				continue
			}
		}
		inline[name] = given[i].Value
	}
	return stored, nil
}
