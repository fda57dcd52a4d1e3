//go:build !agentd_runtime_only

package main

import (
	"context"
	"path/filepath"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// stores are the durable state and its fan-out as the configuration chooses them: the
// store, the keyring that seals its secrets and the bus that tells live readers of its
// events. It is the only place, beside openBackend, that names concrete implementations.
type stores struct {
	store   store.Store
	keyring *secret.Keyring
	bus     event.Bus
}

// openStores opens the SQLite store in the data directory, which the caller has locked, with
// the keyring beside it (made at the first start) and the in-process bus; m observes the
// store's statements.
func openStores(ctx context.Context, cfg config.Config, m *metrics.Metrics) (*stores, error) {
	keyring, err := secret.LoadOrCreate(filepath.Join(cfg.DataDir, app.KeyringFile))
	if err != nil {
		return nil, err
	}
	st, err := sqlite.OpenWith(ctx, filepath.Join(cfg.DataDir, app.DBFile), sqlite.Options{
		Observer: m, CacheBytes: cfg.SQLiteCacheBytes, ListingCacheBytes: listingCache(cfg.ListingCacheBytes)})
	if err != nil {
		return nil, err
	}
	return &stores{store: st, keyring: keyring, bus: &event.LocalBus{}}, nil
}

// Close closes the store.
func (s *stores) Close() error { return s.store.Close() }

// listingCache is the SQLite store's listing cache budget for a configured size, where 0 is
// off.
func listingCache(configured int64) int64 {
	if configured == 0 {
		return -1
	}
	return configured
}
