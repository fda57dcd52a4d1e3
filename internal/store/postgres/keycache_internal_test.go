package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

// TestKeyCacheRules: a key read before the cache was emptied (its deletion's notification
// may be what emptied it) is not kept; a key is used for the time to live and no longer; the
// cache holds at most keyCacheMax keys; off, it keeps nothing.
func TestKeyCacheRules(t *testing.T) {
	c := keyCache{ttl: time.Minute}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k, u := auth.APIKey{ID: "k"}, auth.User{ID: "u"}
	h := []byte("hash")

	_, _, _, gen := c.get(h, now)
	c.put(h, k, u, gen, now)
	if _, _, ok, _ := c.get(h, now); ok {
		t.Fatal("kept while off")
	}

	c.use(true)
	_, _, _, gen = c.get(h, now)
	c.empty()
	c.put(h, k, u, gen, now)
	if _, _, ok, _ := c.get(h, now); ok {
		t.Fatal("kept a key read before an emptying")
	}

	_, _, _, gen = c.get(h, now)
	c.put(h, k, u, gen, now)
	if got, gu, ok, _ := c.get(h, now.Add(time.Minute-time.Nanosecond)); !ok || got.ID != "k" || gu.ID != "u" {
		t.Fatal("not kept for its time to live")
	}
	if _, _, ok, _ := c.get(h, now.Add(time.Minute)); ok {
		t.Fatal("kept past its time to live")
	}
	if _, _, ok, _ := c.get(h, now.Add(-time.Second)); ok {
		t.Fatal("used from before it was read (the clock went back)")
	}

	for i := range 2 * keyCacheMax {
		_, _, _, gen = c.get(h, now)
		c.put(fmt.Appendf(nil, "h%d", i), k, u, gen, now)
		if len(c.keys) > keyCacheMax {
			t.Fatalf("%d keys kept, over %d", len(c.keys), keyCacheMax)
		}
	}

	c.use(false)
	if _, _, ok, _ := c.get([]byte("h1"), now); ok || len(c.keys) != 0 {
		t.Fatal("off, the cache still holds keys")
	}
}
