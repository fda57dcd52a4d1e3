package postgres_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens a Store on the database at url, closed when the test ends.
func open(t testing.TB, url string) *postgres.Store {
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
		// Another replica's store on the same database.
		Replica: func(t *testing.T, s store.Store) store.Store {
			mu.Lock()
			url := urls[s]
			mu.Unlock()
			return open(t, url)
		},
		// The writers record through one replica's bus, and the feeds follow through
		// another replica's, which reads the log through its own store.
		Buses: func(t *testing.T, s store.Store) storetest.Buses {
			mu.Lock()
			url := urls[s]
			mu.Unlock()
			other := open(t, url)
			return storetest.Buses{Writer: newBus(t, s.(*postgres.Store)), Reader: newBus(t, other), ReaderStore: other}
		},
	})
}

// newBus starts a Bus on s, closed when the test ends, and waits until it listens.
func newBus(t *testing.T, s *postgres.Store) *postgres.Bus {
	t.Helper()
	b := postgres.NewBus(s, "", nil)
	t.Cleanup(func() { b.Close() })
	waitListening(t, b, 30*time.Second)
	return b
}

// waitListening waits until b listens to the database's notifications, for at most within.
func waitListening(t *testing.T, b *postgres.Bus, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for b.Check(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the bus does not listen after %v", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
