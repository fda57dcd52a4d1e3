//go:build !agentd_runtime_only

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/secret"
)

// rotateKey makes a new key active in the server's keyring, reseals every stored secret
// under it and drops the old keys. On SQLite it takes the data directory's lock, so a
// running server refuses it; on PostgreSQL the keyring is the shared file, which every
// replica must read afterwards (they must be stopped meanwhile: one still sealing under the
// old key would write values the pruned keyring cannot open).
func rotateKey(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	if !cfg.Postgres() {
		unlock, err := app.LockDataDir(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("%w (stop agentd serve before rotating the key)", err)
		}
		defer unlock()
	}
	data, err := openStores(ctx, cfg, "", nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer data.Close()
	id, err := data.keyring.Rotate(ctx, data.store)
	if errors.Is(err, secret.ErrNoFile) {
		return errors.New("the keyring was given as content (AGENTD_KEYRING): rotate the key on a keyring file (--keyring-file), then give its new content to every replica")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "server key rotated: every stored secret is now sealed under key %s\n", id)
	return nil
}

// createKeyring writes a new keyring file for the replicas of a database to share.
func createKeyring(path string, stdout io.Writer) error {
	k, err := secret.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "keyring %s created with key %s; give it to every replica (--keyring-file) and keep a copy: the stored secrets cannot be opened without it\n", path, k.ActiveKeyID())
	return nil
}
