//go:build !agentd_runtime_only

package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// stores are the durable state and its fan-out as the configuration chooses them: the
// store, the keyring that seals its secrets and the bus that tells live readers of its
// events. It is the only place, beside openBackend, that names concrete implementations.
type stores struct {
	store   store.Store
	keyring *secret.Keyring
	bus     event.Bus
	// closeBus stops the bus, before the store closes.
	closeBus func() error
}

// openStores opens the store the configuration names, the keyring (openKeyring) and the
// bus: the SQLite store in the data directory, which the caller has locked, with the
// in-process bus, or the PostgreSQL database with its notifications; m, when not nil,
// observes SQLite's statements.
func openStores(ctx context.Context, cfg config.Config, replica string, m *metrics.Metrics, log *slog.Logger) (*stores, error) {
	keyring, err := openKeyring(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Postgres() {
		st, err := postgres.Open(ctx, cfg.Database, postgres.Options{ListingCacheBytes: listingCache(cfg.ListingCacheBytes)})
		if err != nil {
			return nil, err
		}
		// Every replica's streams get every replica's events, through the database.
		bus := postgres.NewBus(st, replica, log)
		return &stores{store: st, keyring: keyring, bus: bus, closeBus: bus.Close}, nil
	}
	o := sqlite.Options{CacheBytes: cfg.SQLiteCacheBytes, ListingCacheBytes: listingCache(cfg.ListingCacheBytes)}
	if m != nil {
		o.Observer = m
	}
	st, err := sqlite.OpenWith(ctx, filepath.Join(cfg.DataDir, app.DBFile), o)
	if err != nil {
		return nil, err
	}
	return &stores{store: st, keyring: keyring, bus: &event.LocalBus{}}, nil
}

// errNoKeyring: a server on PostgreSQL was given no keyring.
var errNoKeyring = errors.New("a server on PostgreSQL needs the keyring that every replica of the database shares: " +
	"set --keyring-file (AGENTD_KEYRING_FILE) or AGENTD_KEYRING; agentd keyring create FILE makes a new one, " +
	"and a store moved from SQLite (agentd migrate) keeps the keyring.json of its data directory")

// openKeyring loads the configured keyring: a file, the content given in the environment,
// or, on SQLite, the data directory's own, made at the first start. A server on PostgreSQL
// never makes one: the first replica's would be unreadable to the others.
func openKeyring(cfg config.Config) (*secret.Keyring, error) {
	switch {
	case cfg.KeyringFile != "":
		return secret.Load(cfg.KeyringFile)
	case cfg.Keyring != "":
		return secret.Parse([]byte(cfg.Keyring))
	case cfg.Postgres():
		return nil, errNoKeyring
	}
	return secret.LoadOrCreate(filepath.Join(cfg.DataDir, app.KeyringFile))
}

// Close stops the bus and closes the store.
func (s *stores) Close() error {
	if s.closeBus != nil {
		s.closeBus()
	}
	return s.store.Close()
}

// listingCache is a store's listing cache budget for a configured size, where 0 is off.
func listingCache(configured int64) int64 {
	if configured == 0 {
		return -1
	}
	return configured
}

// watchKeyring reads the keyring's file again every interval until ctx ends, and logs the
// keys it holds when they change. A file that cannot be read leaves the keys as they were.
func watchKeyring(ctx context.Context, k *secret.Keyring, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := k.Reload()
		switch {
		case err != nil:
			log.Warn("keyring file: kept the keys read before", "err", err)
		case changed:
			log.Info("keyring file changed", "keys", k.KeyIDs(), "active_key", k.ActiveKeyID())
		}
	}
}
