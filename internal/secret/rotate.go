package secret

import (
	"context"
	"fmt"
)

// Resealer rewrites every sealed value of a store through fn in one transaction.
type Resealer interface {
	Reseal(ctx context.Context, fn func(sealed []byte) ([]byte, error)) error
}

// Rotate makes a new key active, reseals every stored secret under it and then drops the old
// keys. It is safe to interrupt: until the last step the keyring file holds both the old and
// the new keys, so every stored value opens whether or not the reseal committed.
func (k *Keyring) Rotate(ctx context.Context, store Resealer) (newID string, err error) {
	if k.path == "" {
		return "", fmt.Errorf("rotate: %w", ErrNoFile)
	}
	newID, err = k.addKey(true)
	if err != nil {
		return "", fmt.Errorf("rotate: add key: %w", err)
	}
	err = store.Reseal(ctx, func(sealed []byte) ([]byte, error) {
		plain, err := k.Open(sealed)
		if err != nil {
			return nil, err
		}
		return k.Seal(plain)
	})
	if err != nil {
		return "", fmt.Errorf("rotate: reseal: %w", err)
	}
	k.mu.RLock()
	var f keyFile
	for _, e := range k.file.Keys {
		if e.ID == newID {
			f.Keys = append(f.Keys, e)
		}
	}
	k.mu.RUnlock()
	if err := k.write(f); err != nil {
		return "", fmt.Errorf("rotate: drop old keys: %w", err)
	}
	return newID, nil
}
