package runtime

import (
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestExecutableRanges(t *testing.T) {
	const smaps = `00400000-00866000 r-xp 00000000 fe:00 123                            /opt/agent d/agentd
Size:               4504 kB
Rss:                4056 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
00866000-00d16000 r--p 00466000 fe:00 123                            /opt/agent d/agentd
Anonymous:             0 kB
00d16000-00d20000 r--p 00916000 fe:00 123                            /opt/agent d/agentd
Anonymous:             8 kB
00d20000-00d76000 rw-p 00920000 fe:00 123                            /opt/agent d/agentd
Anonymous:            40 kB
00d76000-00d78000 r--p 00976000 fe:00 123                            /opt/agent d/agentd
Rss:                   8 kB
00d78000-02dba000 rw-p 00000000 00:00 0 
Anonymous:            92 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 456                            /usr/lib/libc.so.6
Anonymous:             0 kB
7fff0a29d000-7fff0a2be000 rw-p 00000000 00:00 0                          [stack]
Anonymous:            16 kB
`
	got, err := executableRanges(strings.NewReader(smaps), "/opt/agent d/agentd")
	if err != nil {
		t.Fatal(err)
	}
	want := []memRange{{0x400000, 0x866000}, {0x866000, 0xd16000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ranges = %x, want %x (read-only, private, of the executable, and said to hold no page of their own)", got, want)
	}
}

// TestExecutableTrimmer trims this test binary's own read-only pages, which it then keeps
// running on, mapped again as it needs them.
func TestExecutableTrimmer(t *testing.T) {
	trim, err := executableTrimmer()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := executableRanges(f, exe)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pc := reflect.ValueOf(TestExecutableTrimmer).Pointer()
	inText := false
	for _, r := range ranges {
		inText = inText || r.start <= pc && pc < r.end
	}
	if !inText {
		t.Fatalf("no range of %x holds this test's code at %#x", ranges, pc)
	}
	before := rssFile(t)
	trim()
	after := rssFile(t)
	if after >= before {
		t.Errorf("RssFile %d kB before the trim, %d kB after", before, after)
	}
	t.Logf("RssFile %d kB before the trim, %d kB after", before, after)
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

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
