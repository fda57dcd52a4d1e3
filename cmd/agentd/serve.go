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
	"github.com/agentd/agentd/internal/id"
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

// memoryLimit is the soft limit of the server's resident memory that the configuration asks
// for (none: 0), and it logs where it came from.
func memoryLimit(cfg config.Config, log *slog.Logger) int64 {
	switch {
	case cfg.GoMemLimit != "":
		log.Info("memory limit: GOMEMLIMIT's, left to the Go runtime", "gomemlimit", cfg.GoMemLimit)
		return 0
	case cfg.MemoryLimit == config.MemoryLimitAuto:
		limit, cgroup, err := memlimit.FromCgroup()
		if err != nil {
			log.Warn("memory limit: none, as the cgroup's limit cannot be read", "err", err)
			return 0
		}
		if limit == 0 {
			log.Info("memory limit: none (the server's cgroup sets none; --memory-limit sets one)")
			return 0
		}
		log.Info("memory limit: a share of the cgroup's", "memory_limit_bytes", limit, "cgroup_limit_bytes", cgroup)
		return limit
	case cfg.MemoryLimit > 0:
		log.Info("memory limit: --memory-limit's", "memory_limit_bytes", cfg.MemoryLimit)
	}
	return cfg.MemoryLimit
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	// The memory limit is kept, and the keyring file read again, for as long as the server runs.
	limit := memoryLimit(cfg, log)
	bgCtx, stopBackground := context.WithCancel(ctx)
	var background sync.WaitGroup
	background.Go(func() { memlimit.Run(bgCtx, limit, memlimit.Every) })
	defer background.Wait()
	defer stopBackground()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	unlock, err := app.LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// The addresses are bound before anything else starts: a server that cannot have them
	// stops having done nothing, rather than after it took up the conversations (whose agents
	// would have called the model) and reconciled the sandboxes.
	ls, err := listen(cfg)
	if err != nil {
		return err
	}
	defer ls.close()
	cfg = cfg.Bound(ls.all[0].Addr().String(), ls.agent)
	rt, err := runtimeBinary(cfg, log)
	if err != nil {
		return err
	}
	// The data directory is this server's: the runtime builds of earlier versions can go.
	runtime.RemoveOtherBinaries(filepath.Join(cfg.DataDir, runtimeDir), rt)
	backend, err := openBackend(cfg, rt, log)
	if err != nil {
		return err
	}
	defer backend.Close()
	// This run's id among the replicas of the store, which its leases name.
	replica := cfg.NodeName + "/" + id.New()
	m := metrics.New(log)
	if cfg.Postgres() {
		// One of several replicas, maybe: its figures carry its name and node.
		m = metrics.Of(log, metrics.Replica{ID: replica, Node: cfg.NodeName})
	}
	data, err := openStores(ctx, cfg, replica, m, log)
	if err != nil {
		return err
	}
	defer data.Close()
	if cfg.KeyringFile != "" {
		background.Go(func() { watchKeyring(bgCtx, data.keyring, cfg.KeyringReload, log) })
	}
	a, err := app.New(ctx, app.Options{Config: cfg, Store: data.store, Sealer: data.keyring, Bus: data.bus,
		Backend: backend, Replica: replica, Logger: log, Version: version, Metrics: m})
	if err != nil {
		return err
	}
	defer a.Close()
	if a.BootstrapKey != "" {
		fmt.Fprintf(stdout, "\nagentd created the admin user. Its API key is shown this once:\n\n    %s\n\n"+
			"Send it as the X-Session-API-Key header (or Authorization: Bearer).\n\n", a.BootstrapKey)
	}
	servers := []*http.Server{a.Server()}
	if srv := a.AgentServer(); srv != nil {
		servers = append(servers, srv)
	}
	if srv := a.AdminServer(); srv != nil {
		servers = append(servers, srv)
	}
	if len(servers) != len(ls.all) {
		return fmt.Errorf("the server has %d listeners for %d servers", len(ls.all), len(servers))
	}
	log.Info("agentd serving", "addr", ls.all[0].Addr().String(), "public_url", cfg.PublicURL,
		"agent_server_addr", ls.agent, "agent_server_url", cfg.AgentServerPublicURL, "admin_addr", ls.admin,
		"data_dir", cfg.DataDir, "sandbox_backend", backend.Name(), "version", version)
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(app.Listener(ls.all[i])) }()
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

// listeners are the server's bound addresses: the main one first, then the agent-server
// base's and the admin listener's when the configuration has them.
type listeners struct {
	all []net.Listener
	// agent and admin are the addresses of the agent-server base and the admin listener,
	// "off" when the configuration has none.
	agent, admin string
}

// listen binds every address the configuration names, in the order of listeners; when one
// cannot be bound, it closes those it bound.
func listen(cfg config.Config) (ls listeners, err error) {
	ls.agent, ls.admin = "off", "off"
	defer func() {
		if err != nil {
			ls.close()
		}
	}()
	bind := func(addr, what string) (string, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		ls.all = append(ls.all, ln)
		return ln.Addr().String(), nil
	}
	if _, err := bind(cfg.Addr, "listen"); err != nil {
		return ls, err
	}
	if cfg.AgentServerAddr != "" {
		if ls.agent, err = bind(cfg.AgentServerAddr, "listen for the agent-server API (agent_server_addr)"); err != nil {
			return ls, err
		}
	}
	if cfg.AdminAddr != "" {
		if ls.admin, err = bind(cfg.AdminAddr, "listen for the admin listener (admin_addr)"); err != nil {
			return ls, err
		}
	}
	return ls, nil
}

// close closes every listener; one that its server closed already answers an error, ignored.
func (ls listeners) close() {
	for _, ln := range ls.all {
		ln.Close()
	}
}
