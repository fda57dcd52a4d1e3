package runtime

import (
	"net/http"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// An idle runtime's resident memory is mostly its executable's pages, not its heap (see
// internal/exetrim). So once the runtime has answered no request for IdleTrimAfter, it unmaps
// them: the pages stay in the page cache, and the next request maps again, with a few minor
// faults, the ones it needs.
//
// The heap of a runtime that has only started is a few hundred KiB, below the smallest heap the
// collector aims at (4 MiB): no collection runs, and forcing one (debug.FreeOSMemory) would only
// add the collector's own pages. A runtime that has worked has collected, though, and kept the
// heap it grew to (the scavenger returns it only down to about the collector's goal), so a trim
// also returns the free heap to the system when the heap has grown by heapReturnMin since
// start-up or the last return. And once it has collected, Go collects every two minutes even at
// idle, mapping the collector's pages again: each collection arms the trimmer, so the next trim
// follows.

// IdleTrimAfter is how long the runtime answers no request before it unmaps its executable's
// pages: long enough that a conversation's tool calls, which come seconds apart, do not pay
// for mapping them again each time.
const IdleTrimAfter = 10 * time.Second

// idleTrimmer calls trim once no request has begun or ended for after, and no collection has
// run (armOnCollections). Requests go through handler; touch arms it by hand.
type idleTrimmer struct {
	after time.Duration
	trim  func()
	now   func() time.Time

	trimming sync.Mutex // held by a trim

	mu      sync.Mutex
	last    time.Time // the last time a request began or ended
	armed   bool      // timer runs
	stopped bool
	timer   *time.Timer
}

func newIdleTrimmer(after time.Duration, trim func()) *idleTrimmer {
	t := &idleTrimmer{after: after, trim: trim, now: time.Now}
	t.timer = time.AfterFunc(time.Hour, t.fire)
	t.timer.Stop()
	return t
}

// handler notes each request's beginning and end.
func (t *idleTrimmer) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.touch()
		defer t.touch()
		h.ServeHTTP(w, r)
	})
}

// touch notes activity now, arming the timer if it is not.
func (t *idleTrimmer) touch() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = t.now()
	if !t.armed && !t.stopped {
		t.armed = true
		t.timer.Reset(t.after)
	}
}

// fire runs when the timer ends: it trims if nothing happened for after, or waits the rest.
// Trims run one at a time.
func (t *idleTrimmer) fire() {
	t.mu.Lock()
	if wait := t.after - t.now().Sub(t.last); wait > 0 {
		t.timer.Reset(wait)
		t.mu.Unlock()
		return
	}
	t.armed = false
	t.mu.Unlock()
	t.trimming.Lock()
	defer t.trimming.Unlock()
	t.trim()
}

// stop stops the timer for good; a trim already begun finishes.
func (t *idleTrimmer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.timer.Stop()
	t.armed = false
}

// armOnCollections arms the trimmer after each garbage collection, until it is stopped: a
// cleanup runs once per collection (on an object dropped at once) and then sets the next one.
func (t *idleTrimmer) armOnCollections() {
	goruntime.AddCleanup(new(gcSentinel), func(t *idleTrimmer) {
		t.mu.Lock()
		stopped := t.stopped
		t.mu.Unlock()
		if !stopped {
			t.touch()
			t.armOnCollections()
		}
	}, t)
}

// gcSentinel is the object whose cleanup reports a collection: large enough to have a heap
// block of its own (the tiny allocator packs smaller ones).
type gcSentinel [32]byte

// heapReturnMin is by how much the heap has to have grown for a trim to return its free memory.
const heapReturnMin = 1 << 20

// heapReturner returns the free heap to the system when it has grown (see the top of the file).
type heapReturner struct {
	base    uint64 // held at start-up or after the last return
	samples [3]metrics.Sample
}

func newHeapReturner() *heapReturner {
	h := &heapReturner{}
	h.samples[0].Name = "/memory/classes/heap/objects:bytes"
	h.samples[1].Name = "/memory/classes/heap/unused:bytes"
	h.samples[2].Name = "/memory/classes/heap/free:bytes"
	h.base = h.held()
	return h
}

// held is the heap memory not returned to the system: objects (live or garbage not yet
// collected), the unused space of the spans that hold them, and free spans.
func (h *heapReturner) held() uint64 {
	metrics.Read(h.samples[:])
	var n uint64
	for _, s := range h.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += s.Value.Uint64()
		}
	}
	return n
}

// trim collects and returns the free heap to the system if the heap has grown by
// heapReturnMin. Not safe for concurrent use: the trimmer runs one trim at a time.
func (h *heapReturner) trim() {
	if h.held() < h.base+heapReturnMin {
		return
	}
	debug.FreeOSMemory()
	h.base = h.held()
}
