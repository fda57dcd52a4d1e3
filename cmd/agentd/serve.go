package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/httpapi"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/store/sqlite"
)

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()

	keyring, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, "keyring.json"))
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "agentd.db"))
	if err != nil {
		return err
	}
	defer st.Close()

	backend, warnings, err := openBackend(cfg, log)
	if err != nil {
		return err
	}
	defer backend.Close()
	for _, spec := range specsFromConfig(cfg) {
		if err := st.PutSpec(ctx, spec); err != nil {
			return fmt.Errorf("store sandbox spec %s: %w", spec.ID, err)
		}
	}
	if _, err := st.GetSpec(ctx, cfg.DefaultSpec); err != nil {
		return fmt.Errorf("default sandbox spec %q: %w", cfg.DefaultSpec, err)
	}

	sandboxes := sandbox.NewService(sandbox.ServiceOptions{
		Store: st, Backend: backend, Sealer: keyring, Logger: log,
		DefaultSpec: cfg.DefaultSpec, MaxRunningPerUser: cfg.MaxRunningSandboxes,
		StartTimeout: cfg.SandboxStartTimeout,
	})
	defer sandboxes.Close()
	if err := sandboxes.Reconcile(ctx); err != nil {
		return err
	}
	svcCtx, cancelSvc := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSvc()
	go sandboxes.Run(svcCtx)

	users := auth.NewService(st, auth.Options{Logger: log})
	key, err := users.Bootstrap(ctx, cfg.AdminKey)
	if err != nil {
		return err
	}
	if key != "" {
		fmt.Fprintf(stdout, "\nagentd created the admin user. Its API key is shown this once:\n\n    %s\n\n"+
			"Send it as the X-Session-API-Key header (or Authorization: Bearer).\n\n", key)
	}

	conversations := conversation.NewService(conversation.Options{
		Store: st, Sandboxes: sandboxes, Sealer: keyring, Logger: log,
		StartTimeout: cfg.SandboxStartTimeout,
	})
	defer conversations.Close()
	if err := conversations.Resume(ctx); err != nil {
		return err
	}

	api, err := httpapi.New(httpapi.Deps{
		Auth: users, Conversations: conversations, Sandboxes: sandboxes,
		Settings:     settings.NewService(st, keyring, nil),
		GitProviders: gitprovider.NewService(st, keyring, nil),
		Open:         keyring.Open, Logger: log, PublicURL: cfg.PublicURL, Version: version,
		SpecWarnings: warnings,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("agentd serving", "addr", ln.Addr().String(), "public_url", cfg.PublicURL,
		"data_dir", cfg.DataDir, "sandbox_backend", backend.Name(), "version", version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	return nil
}
