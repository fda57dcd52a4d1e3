package runtime

import (
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"testing"
	"time"
)

// TestIdleTrimmerWaitsForQuiet drives the trimmer's clock by hand: a timer that ends while
// activity is recent waits the rest, one that ends after a quiet period trims.
func TestIdleTrimmerWaitsForQuiet(t *testing.T) {
	trims := 0
	tr := newIdleTrimmer(time.Hour, func() { trims++ })
	defer tr.stop()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr.now = func() time.Time { return now }

	tr.touch()
	now = now.Add(40 * time.Minute)
	tr.touch() // a request 20 minutes before the timer ends
	now = now.Add(20 * time.Minute)
	tr.fire()
	if trims != 0 || !tr.armed {
		t.Fatalf("20 minutes after a request: %d trims, armed %v; want none and armed for the rest", trims, tr.armed)
	}
	now = now.Add(40 * time.Minute)
	tr.fire()
	if trims != 1 || tr.armed {
		t.Fatalf("an hour after the last request: %d trims, armed %v; want one and not armed", trims, tr.armed)
	}
	tr.touch()
	if !tr.armed {
		t.Fatal("a request after a trim did not arm the timer again")
	}
}

// TestIdleTrimmerTrimsAfterRequests sends requests through the trimmer's handler and waits
// for the trim its timer makes once they stop.
func TestIdleTrimmerTrimsAfterRequests(t *testing.T) {
	tr, trimmed := quickTrimmer(t)
	srv := httptest.NewServer(tr.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})))
	defer srv.Close()
	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d through the trimmer's handler", resp.StatusCode)
		}
	}
	select {
	case <-trimmed:
	case <-time.After(time.Minute):
		t.Fatal("no trim a minute after the last request")
	}
}

// TestHeapReturner grows the heap by far more than heapReturnMin and drops it: a trim returns
// it to the system, and the next one, with nothing grown since, leaves the heap alone.
func TestHeapReturner(t *testing.T) {
	h := newHeapReturner()
	garbage := make([][]byte, 64)
	for i := range garbage {
		garbage[i] = make([]byte, 256<<10)
	}
	before := h.held()
	if before < h.base+8<<20 {
		t.Fatalf("heap held %d B with 16 MiB more allocated, %d B at the start", before, h.base)
	}
	goruntime.KeepAlive(garbage)
	garbage = nil
	h.trim()
	if after := h.held(); after > before-8<<20 {
		t.Errorf("heap held %d B after the trim, %d B before it with 16 MiB of garbage", after, before)
	}
	base := h.base
	h.trim()
	if h.base != base {
		t.Errorf("a second trim with nothing grown returned the heap again (base %d, then %d)", base, h.base)
	}
}

// TestIdleTrimmerArmedByCollections: a collection arms the trimmer, which then trims.
func TestIdleTrimmerArmedByCollections(t *testing.T) {
	tr, trimmed := quickTrimmer(t)
	tr.armOnCollections()
	deadline := time.Now().Add(time.Minute)
	for {
		goruntime.GC()
		select {
		case <-trimmed:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no trim within a minute of collections")
		}
	}
}

// quickTrimmer is a trimmer that waits a millisecond and reports its trims on the channel.
func quickTrimmer(t *testing.T) (*idleTrimmer, <-chan struct{}) {
	trimmed := make(chan struct{}, 1)
	tr := newIdleTrimmer(time.Millisecond, func() {
		select {
		case trimmed <- struct{}{}:
		default:
		}
	})
	t.Cleanup(tr.stop)
	return tr, trimmed
}
