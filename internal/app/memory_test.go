package app

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemoryReturnerWaitsForIdle: the free memory is returned once the service became idle
// and is still idle when the wait ends; a service busy again by then is left alone until it
// becomes idle once more.
func TestMemoryReturnerWaitsForIdle(t *testing.T) {
	var busy atomic.Bool
	asked := make(chan bool, 10)
	freed := make(chan struct{}, 10)
	r := newMemoryReturner(0, func() bool {
		b := busy.Load()
		asked <- b
		return b
	})
	r.free = func() { freed <- struct{}{} }
	defer r.stop()

	r.idle()
	if b := <-asked; b {
		t.Fatal("the returner saw a busy service")
	}
	<-freed

	// Busy again when the wait ends: nothing is returned.
	busy.Store(true)
	r.idle()
	if b := <-asked; !b {
		t.Fatal("the returner did not see the busy service")
	}
	// The next idle returns it.
	busy.Store(false)
	r.idle()
	if b := <-asked; b {
		t.Fatal("the returner saw a busy service")
	}
	<-freed
	if n := len(freed); n != 0 {
		t.Fatalf("%d returns more than the two idle periods", n)
	}
}

// TestMemoryReturnerReleases: the returner closes what it was given to release (the idle
// connections) before it returns the free heap.
func TestMemoryReturnerReleases(t *testing.T) {
	released := make(chan struct{}, 1)
	r := newMemoryReturner(0, func() bool { return false }, func() { released <- struct{}{} })
	defer r.stop()
	r.idle()
	select {
	case <-released:
	case <-time.After(time.Minute):
		t.Fatal("nothing was released")
	}
}
