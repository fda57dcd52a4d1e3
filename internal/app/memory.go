package app

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// returnMemoryAfter is how long the conversation service stays idle before the server
// returns the memory its conversations freed to the system.
const returnMemoryAfter = 5 * time.Second

// freeHeap collects and returns the free heap to the system (debug.FreeOSMemory), after a
// first collection: what sync.Pools hold (the API's answer buffers, up to 1 MiB each) lives
// through one collection in the pools' victim caches, and would keep its pages until the
// next, minutes later on an idle server.
func freeHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}

// memoryReturner gives the system back what a burst of conversations left behind. While
// agents run, the heap grows to what they hold (and the collector's headroom above it);
// once they stop, Go's scavenger returns the freed pages only slowly and only down to about
// the goal of the last collection, which ran while they were busy, so an idle server would
// stay at its peak for minutes. So each time the service becomes idle, and stays idle for
// after, the returner first lets go of what the burst left held: the idle connections to
// model providers (up to one per conversation that was calling at once, each with its
// buffers and two goroutines, kept for the next calls for up to 90 s), the caches the
// burst filled (each conversation's redactor, the session keys and metrics its listings
// decoded, and what a store.MemoryReleaser holds: the SQLite store's listings, keys and idle
// connections, the PostgreSQL store's listings). Left in the heap, what those caches hold would keep alive a few objects in
// each of hundreds of pages that the burst otherwise freed. Then it collects and returns the
// free heap (freeHeap): two collections per burst, none while anything runs.
type memoryReturner struct {
	after time.Duration
	busy  func() bool
	give  []func()

	mu      sync.Mutex
	release []func()
	timer   *time.Timer
}

// newMemoryReturner returns a returner that, once idle for after, runs the steps added by
// alsoRelease, then give in order.
func newMemoryReturner(after time.Duration, busy func() bool, give ...func()) *memoryReturner {
	return &memoryReturner{after: after, busy: busy, give: give}
}

// alsoRelease adds steps that let go of memory, to run before the memory is given back.
func (r *memoryReturner) alsoRelease(steps ...func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release = append(r.release, steps...)
}

// idle notes that the service has just become idle: the return follows after r.after unless
// it is busy again by then. It never blocks.
func (r *memoryReturner) idle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil {
		r.timer = time.AfterFunc(r.after, r.fire)
		return
	}
	r.timer.Reset(r.after)
}

func (r *memoryReturner) fire() {
	if r.busy() {
		return // the next idle arms it again
	}
	r.now()
}

// now releases and gives back the memory now, busy or not.
func (r *memoryReturner) now() {
	r.mu.Lock()
	release := r.release
	r.mu.Unlock()
	for _, step := range release {
		step()
	}
	for _, step := range r.give {
		step()
	}
}

// stop cancels a return not yet made.
func (r *memoryReturner) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}
