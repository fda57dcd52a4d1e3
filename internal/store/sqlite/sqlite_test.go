package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[store.Store]string{}
	open := func(t *testing.T, path string) store.Store {
		t.Helper()
		// Through the statement observer, as the server opens it.
		s, err := sqlite.OpenWith(t.Context(), path, sqlite.Options{Observer: &queryLog{}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		mu.Lock()
		paths[s] = path
		mu.Unlock()
		return s
	}
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) store.Store {
			return open(t, filepath.Join(t.TempDir(), "agentd.db"))
		},
		Reopen: func(t *testing.T, old store.Store) store.Store {
			mu.Lock()
			path := paths[old]
			mu.Unlock()
			return open(t, path)
		},
		// Another process's store on the same file.
		Replica: func(t *testing.T, s store.Store) store.Store {
			mu.Lock()
			path := paths[s]
			mu.Unlock()
			return open(t, path)
		},
	})
}
