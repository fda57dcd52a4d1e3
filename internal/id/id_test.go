package id

import (
	"regexp"
	"testing"
	"time"
)

// TestOrdered: an event id is a version 7 UUID in its dashed form; ids made in a later
// millisecond sort after; none repeats.
func TestOrdered(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	before := time.Now().UnixMilli()
	first := Ordered()
	for range 10000 {
		u := Ordered()
		if !shape.MatchString(u) {
			t.Fatalf("%q is not a dashed version 7 UUID", u)
		}
		if seen[u] {
			t.Fatalf("%q made twice", u)
		}
		seen[u] = true
	}
	// Its first 48 bits are the time it was made, in milliseconds.
	var ms int64
	for _, c := range first[:8] + first[9:13] {
		ms = ms<<4 | int64(hexDigit(c))
	}
	if ms < before || ms > time.Now().UnixMilli() {
		t.Fatalf("%q says %d ms, made between %d and now", first, ms, before)
	}
	// Wait for the next millisecond (a bounded wait for a condition), then a new id sorts
	// after the first.
	for range 1_000_000 {
		if time.Now().UnixMilli() > ms {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	if later := Ordered(); later <= first {
		t.Fatalf("%q, made later, sorts before %q", later, first)
	}
}

func hexDigit(c rune) int {
	if c >= 'a' {
		return int(c-'a') + 10
	}
	return int(c - '0')
}
