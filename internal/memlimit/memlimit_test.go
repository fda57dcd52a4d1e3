package memlimit

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"
)

const mib = 1 << 20

func TestGoLimit(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		limit, rss, file, goMapped int64
		want                       int64
	}{
		{"nothing outside the runtime", 96 * mib, 40 * mib, 0, 40 * mib, 96 * mib},
		{"the executable's pages and SQLite's caches", 96 * mib, 100 * mib, 30 * mib, 64 * mib, 60 * mib},
		{"rounded down to a MiB", 96 * mib, 70*mib + 1, 0, 40 * mib, 65 * mib},
		{"the runtime's memory not all resident", 96 * mib, 30 * mib, 10 * mib, 50 * mib, 86 * mib},
		{"no less than a quarter of the limit", 96 * mib, 200 * mib, 0, 20 * mib, 24 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := goLimit(tc.limit, tc.rss, tc.file, tc.goMapped); got != tc.want {
				t.Fatalf("goLimit(%d, %d, %d, %d) = %d MiB, want %d MiB", tc.limit/mib, tc.rss/mib, tc.file/mib, tc.goMapped/mib, got/mib, tc.want/mib)
			}
		})
	}
}

func TestGauge(t *testing.T) {
	g, err := newGauge()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	rss, file, err := g.resident()
	if err != nil {
		t.Fatal(err)
	}
	if rss < mib || file < mib || file > rss || g.goMapped() < mib {
		t.Fatalf("resident %d bytes, %d of files, the runtime's %d: not those of a Go test process", rss, file, g.goMapped())
	}
}

// TestRunKeepsTheRuntimeUnderTheResidentLimit: the runtime's limit becomes the resident limit
// less what this process holds outside the runtime's memory (its executable's pages at
// least), goes back to what it was when Run ends, and is left alone when there is no limit
// (an operator's GOMEMLIMIT stays).
func TestRunKeepsTheRuntimeUnderTheResidentLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const limit = 1 << 30
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, limit, time.Millisecond)
	}()
	g, err := newGauge()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	// Wait for the first tick's setting, for up to 10,000 ticks.
	var got int64
	for i := 0; ; i++ {
		if got = debug.SetMemoryLimit(-1); got != limit && got != math.MaxInt64 {
			break
		}
		if i == 10_000 {
			t.Fatalf("the runtime's limit is still %d after 10,000 ticks", got)
		}
		select {
		case <-done:
			t.Fatal("Run returned before its context was done")
		case <-time.After(time.Millisecond):
		}
	}
	_, file, err := g.resident()
	if err != nil {
		t.Fatal(err)
	}
	if got >= limit || got < limit/floorShare {
		t.Fatalf("runtime limit %d MiB of %d MiB, with %d MiB of files resident", got/mib, limit/mib, file/mib)
	}
	cancel()
	<-done
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("after Run, the runtime's limit is %d, not what it was before", got)
	}

	const operators = 3 << 30
	debug.SetMemoryLimit(operators)
	Run(t.Context(), 0, time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != operators {
		t.Fatalf("with no limit, Run changed the runtime's limit to %d", got)
	}
}
