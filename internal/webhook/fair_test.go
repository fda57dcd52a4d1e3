package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
	"github.com/agentd/agentd/internal/webhook"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// hangingEndpoints are endpoints on loopback that take requests and never answer (until the
// test ends). They count the requests they hold, and the most they held at once.
type hangingEndpoints struct {
	servers []*httptest.Server
	release chan struct{}
	mu      sync.Mutex
	held    int
	most    int
	total   int
	changed chan struct{} // a request came or went
}

func newHangingEndpoints(t *testing.T, n int) *hangingEndpoints {
	h := &hangingEndpoints{release: make(chan struct{}), changed: make(chan struct{}, 1)}
	for range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.count(+1)
			defer h.count(-1)
			select {
			case <-h.release:
			case <-r.Context().Done():
			}
		}))
		h.servers = append(h.servers, srv)
	}
	// Closing a server waits for its requests: release them first.
	t.Cleanup(func() {
		close(h.release)
		for _, srv := range h.servers {
			srv.Close()
		}
	})
	return h
}

func (h *hangingEndpoints) count(d int) {
	h.mu.Lock()
	h.held += d
	h.most = max(h.most, h.held)
	if d > 0 {
		h.total++
	}
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

func (h *hangingEndpoints) state() (held, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held, h.most
}

// waitHeld waits until the endpoints hold n requests, for at most d.
func (h *hangingEndpoints) waitHeld(t *testing.T, n int, d time.Duration) {
	t.Helper()
	h.wait(t, "hold", func() int { held, _ := h.state(); return held }, n, d)
}

// waitTotal waits until the endpoints have had n requests, for at most d.
func (h *hangingEndpoints) waitTotal(t *testing.T, n int, d time.Duration) {
	t.Helper()
	h.wait(t, "have had", func() int { h.mu.Lock(); defer h.mu.Unlock(); return h.total }, n, d)
}

func (h *hangingEndpoints) wait(t *testing.T, what string, count func() int, n int, d time.Duration) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for count() < n {
		select {
		case <-h.changed:
		case <-deadline.C:
			t.Fatalf("the hanging endpoints %s %d requests, want %d", what, count(), n)
		}
	}
}

// arrivals is an endpoint that answers at once and tells when each delivery arrived, by its
// id.
type arrivals struct {
	*httptest.Server
	got chan arrival
}

type arrival struct {
	id string
	at time.Time
}

func newArrivals(t *testing.T) *arrivals {
	a := &arrivals{got: make(chan arrival, 100)}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.got <- arrival{r.Header.Get("X-Agentd-Delivery"), time.Now()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(a.Close)
	return a
}

// latency notifies an event for owner through s and returns how long its delivery took to
// arrive at a (at most 30 s: a test that waits longer fails).
func (a *arrivals) latency(t *testing.T, s *webhook.Service, owner string, i int) time.Duration {
	t.Helper()
	began := time.Now()
	s.Notify(t.Context(), finished(owner, fmt.Sprintf("conv-%d", i)))
	select {
	case got := <-a.got:
		return got.at.Sub(began)
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery did not arrive within 30 s")
		return 0
	}
}

// TestOneUserCannotStallAnother: a user whose 20 webhooks point at endpoints that never
// answer holds at most its cap of attempts under way, on every dispatcher together, and
// another user's delivery arrives within a second of the time it takes when nobody else
// sends: on one dispatcher on SQLite, and on two replicas' dispatchers sharing PostgreSQL.
//
// The second is the bound; it is checked against the latency measured in the same
// test just before, on this machine as loaded as it is then, never alone.
func TestOneUserCannotStallAnother(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas func(t *testing.T) (webhook.Store, *secret.Keyring)
		n        int
	}{
		{"sqlite", func(t *testing.T) (webhook.Store, *secret.Keyring) {
			w := newWorld(t)
			return w.store, w.keyring
		}, 1},
		{"postgres replicas", func(t *testing.T) (webhook.Store, *secret.Keyring) {
			st, err := postgres.Open(t.Context(), pgtest.Database(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			kr, err := secret.LoadOrCreate(filepath.Join(t.TempDir(), "keyring.json"))
			if err != nil {
				t.Fatal(err)
			}
			return st, kr
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, kr := tc.replicas(t)
			var services []*webhook.Service
			for range tc.n {
				// The default timeout: a hanging attempt holds its place for 10 s, much
				// longer than the test looks.
				s := webhook.NewService(webhook.Options{Store: st, Sealer: kr})
				s.Start()
				t.Cleanup(s.Close)
				services = append(services, s)
			}
			quietEnd := newArrivals(t)
			if _, _, err := services[0].Create(t.Context(), "bob", webhook.CreateRequest{URL: quietEnd.URL, Kinds: []string{"*"}}); err != nil {
				t.Fatal(err)
			}
			var quiet time.Duration
			for i := range 3 {
				quiet = max(quiet, quietEnd.latency(t, services[0], "bob", i))
			}

			hang := newHangingEndpoints(t, webhook.MaxPerUser)
			for _, srv := range hang.servers {
				if _, _, err := services[0].Create(t.Context(), "mallory", webhook.CreateRequest{URL: srv.URL, Kinds: []string{"*"}}); err != nil {
					t.Fatal(err)
				}
			}
			// Every replica is told of some of mallory's events, and claims what the caps
			// leave it.
			for i, s := range services {
				s.Notify(t.Context(), finished("mallory", fmt.Sprintf("m-%d", i)))
			}
			hang.waitHeld(t, webhook.DefaultPerUser, 20*time.Second)

			var under []time.Duration
			for i := range 5 {
				got := quietEnd.latency(t, services[i%len(services)], "bob", 10+i)
				under = append(under, got)
				if got > quiet+time.Second {
					t.Errorf("bob's delivery %d took %v while mallory's endpoints hang, over a second more than the %v it took alone", i, got, quiet)
				}
			}
			if _, most := hang.state(); most > webhook.DefaultPerUser {
				t.Errorf("mallory had %d attempts under way at once, over the cap of %d", most, webhook.DefaultPerUser)
			}
			t.Logf("bob's deliveries: %v alone (the slowest of 3), %v while mallory's %d attempts hang", quiet, under, webhook.DefaultPerUser)
		})
	}
}

// TestEndpointThatKeepsTimingOutPauses: an attempt that times out pauses its endpoint for
// twice the attempt's bound: its delivery's retry is due a millisecond later, but nothing is
// due before the pause ends; once it has, the endpoint is tried again.
func TestEndpointThatKeepsTimingOutPauses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var now atomic.Int64
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	const timeout = 200 * time.Millisecond
	s := w.service(t, webhook.Options{Timeout: timeout, FirstRetry: time.Millisecond, Now: clock})
	hang := newHangingEndpoints(t, 1)
	slow, _, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: hang.servers[0].URL, Kinds: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Notify(t.Context(), finished("alice", "c1"))
	hang.waitHeld(t, 1, 20*time.Second)
	// The attempt times out (by the real clock: the test's stands still).
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds, _, err := s.Deliveries(t.Context(), "alice", slow.ID, "", paging.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].Attempts == 1 {
			if !ds[0].NextAttemptAt.Equal(start.Add(time.Millisecond)) {
				t.Fatalf("the retry is due at %v, want a millisecond after the attempt", ds[0].NextAttemptAt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow delivery %+v never timed out", ds)
		}
		time.Sleep(5 * time.Millisecond)
	}
	next, err := w.store.NextDeliveryAt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(2 * timeout); !next.Equal(want) {
		t.Fatalf("next delivery due at %v, want the end of the endpoint's pause, %v", next, want)
	}
	now.Add(int64(time.Second))                    // past the pause
	s.Notify(t.Context(), finished("alice", "c2")) // wakes the dispatcher
	if _, most := hang.state(); most != 1 {
		t.Fatalf("the endpoint held %d requests at once, want 1", most)
	}
	hang.waitTotal(t, 2, 20*time.Second)
}
