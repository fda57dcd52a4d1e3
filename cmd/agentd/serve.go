//go:build !agentd_runtime_only

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
	"sync"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/memlimit"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/runtime"
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
	// The memory limit is kept for as long as the server runs.
	memCtx, stopMemory := context.WithCancel(ctx)
	var memory sync.WaitGroup
	memory.Go(func() { memlimit.Run(memCtx, cfg.MemoryLimit, memlimit.Every) })
	defer memory.Wait()
	defer stopMemory()
	rt, err := runtimeBinary(cfg, log)
	if err != nil {
		return err
	}
	backend, err := openBackend(cfg, rt, log)
	if err != nil {
		return err
	}
	defer backend.Close()
	a, err := app.New(ctx, app.Options{Config: cfg, Backend: backend, Logger: log, Version: version,
		Metrics: metrics.New(log)})
	if err != nil {
		return err
	}
	defer a.Close()
	// The data directory is this server's now (app.New locked it): the runtime builds of
	// earlier versions can go.
	runtime.RemoveOtherBinaries(filepath.Join(cfg.DataDir, runtimeDir), rt)
	if a.BootstrapKey != "" {
		fmt.Fprintf(stdout, "\nagentd created the admin user. Its API key is shown this once:\n\n    %s\n\n"+
			"Send it as the X-Session-API-Key header (or Authorization: Bearer).\n\n", a.BootstrapKey)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	servers := []*http.Server{a.Server()}
	listeners := []net.Listener{ln}
	agentAddr := "off"
	if agentSrv := a.AgentServer(); agentSrv != nil {
		aln, err := net.Listen("tcp", cfg.AgentServerAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen for the agent-server API (agent_server_addr): %w", err)
		}
		servers, listeners = append(servers, agentSrv), append(listeners, aln)
		agentAddr = aln.Addr().String()
	}
	adminAddr := "off"
	if adminSrv := a.AdminServer(); adminSrv != nil {
		mln, err := net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("listen for the admin listener (admin_addr): %w", err)
		}
		servers, listeners = append(servers, adminSrv), append(listeners, mln)
		adminAddr = mln.Addr().String()
	}
	log.Info("agentd serving", "addr", ln.Addr().String(), "public_url", cfg.PublicURL,
		"agent_server_addr", agentAddr, "agent_server_url", cfg.AgentServerPublicURL, "admin_addr", adminAddr,
		"data_dir", cfg.DataDir, "sandbox_backend", backend.Name(), "version", version)
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(app.Listener(listeners[i])) }()
	}
	var serveErr error
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		log.Info("shutting down")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("shutdown", "err", err)
		}
	}
	return serveErr
}
