package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/process"
)

// server is the agentd under test: `agentd serve` as app.New builds it, with a sandbox
// backend, behind a net/http server on a loopback port, and a client that reuses connections.
type server struct {
	app     *apptest.Server
	backend sandbox.Backend
	http    *http.Server
	served  chan struct{}
	client  *http.Client
	url     string
	key     string // the admin's API key
	ownerID string // the admin's user id
	log     *slog.Logger
}

// startServer builds the server on dataDir with the process backend, the GitHub API of its
// users at githubAPI ("": the public one). Its logs (warnings and worse) go to logw.
func startServer(ctx context.Context, binary, dataDir string, clients int, logw io.Writer, githubAPI string) (*server, error) {
	log := benchLogger(logw)
	b, err := process.New(process.Options{Root: filepath.Join(dataDir, "sandboxes", "process"), Binary: binary, Logger: log})
	if err != nil {
		return nil, err
	}
	return startServerWith(ctx, b, dataDir, clients, log, githubAPI)
}

func benchLogger(logw io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// specNoNetwork is the spec of the bench server whose sandboxes have network none.
const specNoNetwork = "no-network"

// startServerWith builds the server on dataDir with backend b, which it closes with itself
// (also when it fails), and the GitHub API at githubAPI ("": the public one).
func startServerWith(ctx context.Context, b sandbox.Backend, dataDir string, clients int, log *slog.Logger, githubAPI string) (*server, error) {
	return startServerOn(ctx, b, dataDir, config.DatabaseSQLite, clients, log, githubAPI, 0)
}

// specCold is a spec of every bench server alike to the default one, which no warm pool
// serves: the cold start beside a claim from the default spec's pool.
const specCold = "cold"

// startPooledServer is startServerWith with a warm pool of size of the default spec. The
// other servers keep no pool, so that every start their figures time is a cold one.
func startPooledServer(ctx context.Context, b sandbox.Backend, dataDir string, size int, log *slog.Logger) (*server, error) {
	return startServerOn(ctx, b, dataDir, config.DatabaseSQLite, 1, log, "", size)
}

// startPostgresServer builds the server on dataDir with the process backend and the
// PostgreSQL database at dbURL: a replica, with the keyring of dataDir, which several servers
// on one database must share (the caller copies it).
func startPostgresServer(ctx context.Context, binary, dataDir, dbURL string, clients int, logw io.Writer) (*server, error) {
	log := benchLogger(logw)
	b, err := process.New(process.Options{Root: filepath.Join(dataDir, "sandboxes", "process"), Binary: binary, Logger: log})
	if err != nil {
		return nil, err
	}
	return startServerOn(ctx, b, dataDir, dbURL, clients, log, "", 0)
}

// startServerOn is startServerWith on database (config.DatabaseSQLite or a PostgreSQL URL),
// with a warm pool of pool sandboxes of the default spec; flags are more of agentd serve's.
// Every request comes from one user, who does what many would (200 sandboxes started at
// once, the memory curve's conversations), so no user's bound on running sandboxes applies.
func startServerOn(ctx context.Context, b sandbox.Backend, dataDir, database string, clients int, log *slog.Logger, githubAPI string, pool int, flags ...string) (_ *server, err error) {
	key := "bench-" + rand.Text()
	args := append([]string{"--data-dir", dataDir, "--admin-key", key, "--database", database,
		"--sandbox-backend", b.Name(), "--addr", "127.0.0.1:0", "--sandbox-pool", strconv.Itoa(pool),
		"--max-running-sandboxes", "0"}, llmFlags()...)
	cfg, err := config.Load(append(args, flags...), func(string) string { return "" })
	if err != nil {
		b.Close()
		return nil, err
	}
	if githubAPI != "" {
		cfg.GitHubAPIURL = githubAPI
	}
	// The figures time the agent's model calls; a title call beside the first would be
	// among them.
	cfg.ConversationTitles = "off"
	// The default spec has the egress network; this one, none, to measure the difference.
	cfg.Specs = append(cfg.Specs, config.SpecConfig{ID: specNoNetwork, Network: "none"}, config.SpecConfig{ID: specCold})
	s := &server{backend: b, key: key, log: log}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.app, err = apptest.Start(ctx, app.Options{Config: cfg, Backend: b, Logger: log, Version: "bench"}); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{
		Handler:           s.app.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve", "err", err)
		}
	}()
	// No proxy (a new Transport reads no environment) and an idle connection per client, so
	// the loads measure requests, not connection set-up.
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * clients, MaxIdleConnsPerHost: 2 * clients}}
	if err := s.readOwner(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// readOwner sets ownerID to the id of the user the server's key stands for.
func (s *server) readOwner(ctx context.Context) error {
	var me struct {
		ID string `json:"id"`
	}
	if err := s.call(ctx, "GET", "/api/v1/users/me", nil, &me); err != nil {
		return err
	}
	s.ownerID = me.ID
	return nil
}

// close stops the HTTP server and the app, then destroys every sandbox left on the backend
// (sandboxes outlive the app by design) and closes the backend.
func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			s.http.Close()
		}
		<-s.served
		s.client.CloseIdleConnections()
	}
	if s.app != nil {
		s.app.Close()
	}
	insts, err := s.backend.List(ctx)
	if err != nil {
		s.log.Error("cleanup: list sandboxes", "err", err)
	}
	for _, inst := range insts {
		if err := s.backend.Destroy(ctx, inst); err != nil {
			s.log.Error("cleanup: destroy sandbox", "sandbox_id", inst.ID, "err", err)
		}
	}
	s.backend.Close()
}
