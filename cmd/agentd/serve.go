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
	cfg = cfg.Bound(listenAddr(ls.main), listenAddr(ls.agent))
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
	// Each server with its listener: the agent-server base and the admin listener are the
	// app's when the configuration names their addresses, as listen bound them.
	servers, lns := []*http.Server{a.Server()}, []net.Listener{ls.main}
	if ls.agent != nil {
		servers, lns = append(servers, a.AgentServer()), append(lns, ls.agent)
	}
	if ls.admin != nil {
		servers, lns = append(servers, a.AdminServer()), append(lns, ls.admin)
	}
	log.Info("agentd serving", "addr", listenAddr(ls.main), "public_url", cfg.PublicURL,
		"agent_server_addr", listenAddr(ls.agent), "agent_server_url", cfg.AgentServerPublicURL, "admin_addr", listenAddr(ls.admin),
		"data_dir", cfg.DataDir, "sandbox_backend", backend.Name(), "version", version)
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(app.Listener(lns[i])) }()
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

// listeners are the server's bound addresses: the main one, and the agent-server base's and
// the admin listener's when the configuration has them (nil when not).
type listeners struct{ main, agent, admin net.Listener }

// listen binds every address the configuration names; when one cannot be bound, it closes
// those it bound.
func listen(cfg config.Config) (ls listeners, err error) {
	defer func() {
		if err != nil {
			ls.close()
		}
	}()
	for _, b := range []struct {
		ln         *net.Listener
		addr, what string
	}{
		{&ls.main, cfg.Addr, "listen"},
		{&ls.agent, cfg.AgentServerAddr, "listen for the agent-server API (agent_server_addr)"},
		{&ls.admin, cfg.AdminAddr, "listen for the admin listener (admin_addr)"},
	} {
		if b.addr == "" {
			continue
		}
		if *b.ln, err = net.Listen("tcp", b.addr); err != nil {
			return ls, fmt.Errorf("%s: %w", b.what, err)
		}
	}
	return ls, nil
}

// listenAddr is ln's address, "off" for a listener the configuration does not have.
func listenAddr(ln net.Listener) string {
	if ln == nil {
		return "off"
	}
	return ln.Addr().String()
}

// close closes every listener; one that its server closed already answers an error, ignored.
func (ls listeners) close() {
	for _, ln := range []net.Listener{ls.main, ls.agent, ls.admin} {
		if ln != nil {
			ln.Close()
		}
	}
}
