package postgres

import (
	"sync"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

// Every request with an API key looks the key up (LookupAPIKey): on PostgreSQL a round trip
// to the database and a join there, one of the two round trips of a listing answered from the
// listing cache. So the keys found are kept in memory, for at most KeyCacheTTL, while the
// replica's Bus listens to the database's notifications, and no longer (the SQLite store keeps
// them as of its data version instead, which PostgreSQL has no cheap equivalent of):
//
//   - A key deleted through any replica (DeleteAPIKey) notifies EventsChannel in the deleting
//     transaction ("k"); every listening replica empties its cache when the notification
//     comes, so the key stops working everywhere a notification's delivery after the commit
//     (about a millisecond on one network). The deleting replica empties its own at once.
//   - Without a listening connection a replica would not hear of a deletion: the cache is
//     empty and unused from the moment the connection breaks until it listens again, and it
//     is only ever used by a store whose Bus runs (a store opened for a migration keeps none).
//   - A key removed behind agentd's back (a DELETE in psql) works on for at most KeyCacheTTL;
//     so does one whose deletion's notification is lost with a connection that breaks
//     without its side noticing.
//
// Users are never changed or deleted, and a key only ever deleted, so the deletion is the
// only change to hear of. Keys not found are not kept (a new key works at once), and a key's
// expiry is checked on every use (auth.Service), cached or not.

// DefaultKeyCacheTTL is how long a key found stays in the cache, unless Options say otherwise.
const DefaultKeyCacheTTL = 10 * time.Second

// keyCacheMax bounds the keys kept: a replica that sees more is emptied of the expired ones,
// and when none is, of all.
const keyCacheMax = 4096

// keyCache is the cache of keys found. Its zero value is off.
type keyCache struct {
	ttl time.Duration

	mu sync.Mutex
	on bool
	// gen counts the emptyings: a key read before one is not kept after it, as its deletion
	// may be what emptied the cache.
	gen  uint64
	keys map[string]cachedKey // by hash
}

type cachedKey struct {
	key  auth.APIKey
	user auth.User
	at   time.Time
}

// get returns the key of hash if it is kept and fresh, and the generation to put a key read
// from the database with.
func (c *keyCache) get(hash []byte, now time.Time) (auth.APIKey, auth.User, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return auth.APIKey{}, auth.User{}, false, c.gen
	}
	e, ok := c.keys[string(hash)]
	if !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		return auth.APIKey{}, auth.User{}, false, c.gen
	}
	return e.key, e.user, true, c.gen
}

// put keeps a key read from the database at generation gen, unless the cache was emptied
// since or is off.
func (c *keyCache) put(hash []byte, k auth.APIKey, u auth.User, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || gen != c.gen {
		return
	}
	if len(c.keys) >= keyCacheMax {
		for h, e := range c.keys {
			if now.Sub(e.at) >= c.ttl || now.Before(e.at) {
				delete(c.keys, h)
			}
		}
		if len(c.keys) >= keyCacheMax {
			c.keys = nil
		}
	}
	if c.keys == nil {
		c.keys = map[string]cachedKey{}
	}
	c.keys[string(hash)] = cachedKey{key: k, user: u, at: now}
}

// empty forgets every key.
func (c *keyCache) empty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.keys = nil
}

// use turns the cache on (the Bus listens: deletions will be heard of) or off, empty either
// way: what was kept before may have been deleted while nobody listened.
func (c *keyCache) use(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.keys = nil
	c.on = on && c.ttl > 0
}
