package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// An idle runtime's resident memory is mostly its executable's pages, not its heap: start-up
// (package initialisation, flag parsing, the server's set-up) and the first requests touch code
// and read-only data all over the binary, and the kernel maps each page touched together with
// its neighbours already in the page cache (fault-around, 64 KiB at a time), so most of the
// binary's text, read-only data and function tables end up mapped into the process although an
// idle runtime uses little of it. Those pages belong to the page cache, shared with every other
// sandbox running the same file, but each process's resident set counts all it maps.
//
// So once the runtime has answered no request for IdleTrimAfter, it unmaps them (madvise
// MADV_DONTNEED on the executable's read-only mappings): the pages stay in the page cache, and
// the next request maps again, with a few minor faults, the ones it needs. Only mappings that
// are not writable and hold no private copy of a page are trimmed, so nothing is lost: their
// content is the file's.
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

// memRange is an address range of this process.
type memRange struct{ start, end uintptr }

// executableRanges returns the mappings of this process's executable (exe, the target of
// /proc/self/exe) that can be trimmed, read from smaps (/proc/self/smaps): the private ones
// that are not writable and hold no page of their own (Anonymous: 0), so that dropping their
// pages loses nothing. Relocated read-only data of a position-independent build, written
// before it was made read-only, holds such pages and is left out. smaps is read a line at a
// time: it runs to tens of KiB, which read whole would stay in the heap of a runtime that
// collects no garbage while idle.
func executableRanges(smaps io.Reader, exe string) ([]memRange, error) {
	var out []memRange
	var candidate *memRange // the mapping being read, if it may be trimmed
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Bytes()
		if r, perms, path, ok := mappingHeader(line); ok {
			candidate = nil
			if string(path) == exe && len(perms) == 4 && perms[1] != 'w' && perms[3] == 'p' {
				candidate = &r
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok && candidate != nil {
			if string(bytes.TrimSpace(v)) == "0 kB" {
				out = append(out, *candidate)
			}
			candidate = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read smaps: %w", err)
	}
	return out, nil
}

// mappingHeader parses the first line of a mapping in /proc/<pid>/smaps or maps:
// "start-end perms offset dev inode   path", path empty for an anonymous mapping.
func mappingHeader(line []byte) (r memRange, perms, path []byte, ok bool) {
	rest := line
	var fields [5][]byte
	for i := range fields {
		rest = bytes.TrimLeft(rest, " ")
		f, after, found := bytes.Cut(rest, []byte(" "))
		if len(f) == 0 || (!found && i < 4) {
			return memRange{}, nil, nil, false
		}
		fields[i], rest = f, after
	}
	lo, hi, found := bytes.Cut(fields[0], []byte("-"))
	if !found {
		return memRange{}, nil, nil, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return memRange{}, nil, nil, false
	}
	return memRange{uintptr(start), uintptr(end)}, fields[1], bytes.TrimLeft(rest, " "), true
}

// executableTrimmer returns the function that unmaps this process's executable's read-only
// pages, found now, once, so that a trim is only system calls.
func executableTrimmer() (func(), error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("find the executable: %w", err)
	}
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("read the mappings: %w", err)
	}
	ranges, err := executableRanges(smaps, exe)
	smaps.Close()
	if err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("no read-only mapping of %s", exe)
	}
	return func() {
		for _, r := range ranges {
			// Only ever fails for a range that is not mapped, which these are.
			_, _, _ = unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED)
		}
	}, nil
}
