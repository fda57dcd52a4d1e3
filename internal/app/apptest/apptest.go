// Package apptest starts a server for tests and benchmarks as `agentd serve` does on its
// defaults: the SQLite store and the keyring in the configuration's data directory, and the
// in-process event bus, beside the sandbox backend the caller chose; or, when the
// configuration's database is a PostgreSQL URL, on that database with its bus (and still the
// data directory's keyring, which tests give every server they start on one database). The
// binary does not link it: cmd/agentd composes the server itself.
package apptest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// Server is a started App with the store and keyring it runs on.
type Server struct {
	*app.App
	Store   store.Store
	Keyring *secret.Keyring
	unlock  func()
	bus     *postgres.Bus
}

// Start locks o.Config.DataDir (making it if needed), opens the keyring and the SQLite store
// there, and starts the app on them with a new in-process bus. o's Store, Sealer and Bus
// must be nil: Start fills them. On error nothing stays open.
func Start(ctx context.Context, o app.Options) (_ *Server, err error) {
	if o.Store != nil || o.Sealer != nil || o.Bus != nil {
		return nil, errors.New("apptest: Start opens the store, keyring and bus itself")
	}
	dir := o.Config.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	s := &Server{}
	if s.unlock, err = app.LockDataDir(dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.Keyring, err = secret.LoadOrCreate(filepath.Join(dir, app.KeyringFile)); err != nil {
		return nil, err
	}
	// One registry for the app and the store's statements, as agentd serve has.
	if o.Metrics == nil {
		log := o.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		o.Metrics = metrics.New(log)
	}
	if o.Config.Postgres() {
		opts := postgres.Options{ListingCacheBytes: -1}
		if o.Config.ListingCacheBytes > 0 {
			opts.ListingCacheBytes = o.Config.ListingCacheBytes
		}
		pg, err := postgres.Open(ctx, o.Config.Database, opts)
		if err != nil {
			return nil, err
		}
		s.Store = pg
		if o.Replica == "" {
			o.Replica = o.Config.NodeName + "/" + id.New()
		}
		s.bus = postgres.NewBus(pg, o.Replica, o.Logger)
		o.Bus = s.bus
	} else {
		opts := sqlite.Options{Observer: o.Metrics, CacheBytes: o.Config.SQLiteCacheBytes, ListingCacheBytes: -1}
		if o.Config.ListingCacheBytes > 0 {
			opts.ListingCacheBytes = o.Config.ListingCacheBytes
		}
		if s.Store, err = sqlite.OpenWith(ctx, filepath.Join(dir, app.DBFile), opts); err != nil {
			return nil, err
		}
		o.Bus = &event.LocalBus{}
	}
	o.Store, o.Sealer = s.Store, s.Keyring
	if s.App, err = app.New(ctx, o); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the app, then the store, and releases the data directory. Safe twice.
func (s *Server) Close() {
	if s.App != nil {
		s.App.Close()
	}
	if s.bus != nil {
		s.bus.Close()
	}
	if s.Store != nil {
		s.Store.Close()
	}
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}
