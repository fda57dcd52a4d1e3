//go:build !agentd_runtime_only

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
)

func rotateKey(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	unlock, err := app.LockDataDir(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("%w (stop agentd serve before rotating the key)", err)
	}
	defer unlock()
	keyring, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, app.KeyringFile))
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, app.DBFile))
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := keyring.Rotate(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "server key rotated: every stored secret is now sealed under key %s\n", id)
	return nil
}
