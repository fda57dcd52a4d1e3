package app

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
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
	}, func() { freed <- struct{}{} })
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

// TestMemoryReturnerRunsItsSteps: once idle, the returner runs the steps that release
// memory, those added later included, then those that give it back, in order.
func TestMemoryReturnerRunsItsSteps(t *testing.T) {
	ran := make(chan int, 4)
	r := newMemoryReturner(0, func() bool { return false }, func() { ran <- 3 }, func() { ran <- 4 })
	defer r.stop()
	r.alsoRelease(func() { ran <- 1 })
	r.alsoRelease(func() { ran <- 2 })
	r.idle()
	for want := 1; want <= 4; want++ {
		select {
		case got := <-ran:
			if got != want {
				t.Fatalf("step %d ran as step %d", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("step %d did not run", want)
		}
	}
}

// TestFreeHeapEmptiesPools: what a sync.Pool holds is collected by freeHeap, not left in the
// pool's victim cache for the next collection.
func TestFreeHeapEmptiesPools(t *testing.T) {
	var pool sync.Pool
	b := new([64 << 10]byte)
	held := weak.Make(b)
	pool.Put(b)
	b = nil
	freeHeap()
	if held.Value() != nil {
		t.Fatal("the pooled buffer lives on after freeHeap")
	}
	runtime.KeepAlive(&pool)
}
