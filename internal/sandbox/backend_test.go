package sandbox

import (
	"context"
	"testing"
	"time"
)

// TestWaitDeadline: a backend's wait within Start ends at the start's own deadline, later or
// earlier than the backend's fallback, and at the fallback only when the start has none.
func TestWaitDeadline(t *testing.T) {
	const fallback = 30 * time.Second
	for _, d := range []time.Duration{5 * time.Minute, time.Second} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		want, _ := ctx.Deadline()
		if got := WaitDeadline(ctx, fallback); !got.Equal(want) {
			t.Errorf("with a start timeout of %v the wait ends at %v, want the context's %v", d, got, want)
		}
		cancel()
	}
	before := time.Now()
	got := WaitDeadline(context.Background(), fallback)
	if got.Before(before.Add(fallback)) || got.After(time.Now().Add(fallback)) {
		t.Errorf("without a deadline the wait ends at %v, want %v from now", got, fallback)
	}
}
