package sandbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrSessionKey: the key is missing, or it is not the session key of the sandbox (of any
// sandbox, when none is named).
var ErrSessionKey = errors.New("not a sandbox's session key")

// HashSessionKey is the digest the store finds a sandbox by. Session keys are 32 random
// bytes, so a plain digest cannot be reversed by guessing.
func HashSessionKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// AuthenticateSessionKey returns the sandbox whose session key is key, compared in constant
// time; anything else, an unknown sandbox included, is ErrSessionKey. Whoever holds the key
// acts as the sandbox's owner.
func (s *Service) AuthenticateSessionKey(ctx context.Context, sandboxID, key string) (Sandbox, error) {
	if key == "" || sandboxID == "" {
		return Sandbox{}, ErrSessionKey
	}
	sb, err := s.store.GetSandbox(ctx, "", sandboxID)
	if errors.Is(err, ErrNotFound) {
		return Sandbox{}, ErrSessionKey
	}
	if err != nil {
		return Sandbox{}, fmt.Errorf("check session key of sandbox %s: %w", sandboxID, err)
	}
	if err := s.matchSessionKey(sb, key); err != nil {
		return Sandbox{}, err
	}
	return sb, nil
}

// SandboxForSessionKey returns the sandbox whose session key is key, found by the key's
// digest and then compared in constant time; a key of no sandbox is ErrSessionKey.
func (s *Service) SandboxForSessionKey(ctx context.Context, key string) (Sandbox, error) {
	if key == "" {
		return Sandbox{}, ErrSessionKey
	}
	sb, err := s.store.SandboxBySessionKeyHash(ctx, HashSessionKey(key))
	if errors.Is(err, ErrNotFound) {
		return Sandbox{}, ErrSessionKey
	}
	if err != nil {
		return Sandbox{}, fmt.Errorf("find sandbox by session key: %w", err)
	}
	if err := s.matchSessionKey(sb, key); err != nil {
		return Sandbox{}, err
	}
	return sb, nil
}

func (s *Service) matchSessionKey(sb Sandbox, key string) error {
	if len(sb.SessionKeySealed) == 0 {
		return ErrSessionKey
	}
	want, err := s.sessionKey(sb)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(key)) != 1 {
		return ErrSessionKey
	}
	return nil
}

// hashSessionKeys gives the records of sandboxes started before the store kept the digest
// of their session keys one, so SandboxForSessionKey finds them too.
func (s *Service) hashSessionKeys(ctx context.Context, sbs []Sandbox) error {
	var errs []error
	for _, sb := range sbs {
		if len(sb.SessionKeyHash) > 0 || len(sb.SessionKeySealed) == 0 {
			continue
		}
		key, err := s.sessionKey(sb)
		if err == nil {
			err = s.store.SetSessionKeyHash(ctx, sb.ID, HashSessionKey(key))
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("hash the session key of sandbox %s: %w", sb.ID, err))
		}
	}
	return errors.Join(errs...)
}
