package sandbox

import (
	"testing"
	"time"
)

// TestRefillHolds: the refill is held back for as long as the longest hold lasts, no longer
// once it is released or its time is up, and a release wakes the filler.
func TestRefillHolds(t *testing.T) {
	p := newPools(map[string]int{"": 1}, "default")
	now := time.Now()
	if d := p.refillHeldFor(now); d != 0 {
		t.Fatalf("held for %v with no hold", d)
	}
	short := p.holdRefill(now.Add(time.Second))
	long := p.holdRefill(now.Add(time.Minute))
	if d := p.refillHeldFor(now); d != time.Minute {
		t.Fatalf("held for %v, want the longer hold's minute", d)
	}
	long()
	select {
	case <-p.wake:
	default:
		t.Fatal("a release did not wake the filler")
	}
	long()
	if d := p.refillHeldFor(now); d != time.Second {
		t.Fatalf("held for %v after the longer hold's release, want the shorter's second", d)
	}
	if d := p.refillHeldFor(now.Add(time.Second)); d != 0 {
		t.Fatalf("held for %v once the hold's time is up", d)
	}
	if len(p.claimHolds) != 0 {
		t.Fatalf("%d holds kept after their time", len(p.claimHolds))
	}
	short()
}
