package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
)

// keyringCheckText is what the store's keyring check value seals.
const keyringCheckText = "agentd keyring check"

// ErrWrongKeyring: the server's keyring is not the one the store's secrets are sealed with.
var ErrWrongKeyring = errors.New("the keyring cannot open the secrets the store holds: it is not the keyring they were sealed with; give this server the keyring the others use (--keyring-file or AGENTD_KEYRING)")

// checkKeyring refuses a keyring that cannot open the store's check value, which the first
// server to start on the store sealed: its secrets would all be unreadable, and what it
// sealed unreadable to the other replicas.
func checkKeyring(ctx context.Context, st store.Store, k secret.Sealer) error {
	sealed, err := st.KeyringCheck(ctx, func() ([]byte, error) { return k.Seal([]byte(keyringCheckText)) })
	if err != nil {
		return fmt.Errorf("check the keyring: %w", err)
	}
	plain, err := k.Open(sealed)
	if err != nil || string(plain) != keyringCheckText {
		return ErrWrongKeyring
	}
	return nil
}
