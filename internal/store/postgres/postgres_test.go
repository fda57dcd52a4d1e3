package postgres_test

import (
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens a Store on the database at url, closed when the test ends.
func open(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	urls := map[store.Store]string{}
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) store.Store {
			url := pgtest.Database(t)
			s := open(t, url)
			mu.Lock()
			urls[s] = url
			mu.Unlock()
			return s
		},
		Reopen: func(t *testing.T, old store.Store) store.Store {
			mu.Lock()
			url := urls[old]
			mu.Unlock()
			return open(t, url)
		},
	})
}
