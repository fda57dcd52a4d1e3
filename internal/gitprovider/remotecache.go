package gitprovider

import (
	"sync"
	"time"
)

// remoteTTL is how long a resolved Remote is given again without asking the provider. One
// clone or push is several git requests, the git proxy resolves each, and each resolution is
// calls to the provider's API (the repository, the user); a user's token change drops their
// entries at once.
const remoteTTL = time.Minute

// maxCachedRemotes bounds the cache: past it, expired entries are swept before one is added.
const maxCachedRemotes = 1024

type remoteKey struct{ user, provider, repository string }

type cachedRemote struct {
	remote Remote
	until  time.Time
}

// remoteCache holds recently resolved Remotes. The zero value is ready. Safe for concurrent
// use.
type remoteCache struct {
	mu sync.Mutex
	m  map[remoteKey]cachedRemote
}

func (c *remoteCache) get(k remoteKey, now time.Time) (Remote, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return Remote{}, false
	}
	return e.remote.clone(), true
}

func (c *remoteCache) put(k remoteKey, r Remote, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[remoteKey]cachedRemote{}
	}
	if len(c.m) >= maxCachedRemotes {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
	}
	c.m[k] = cachedRemote{remote: r.clone(), until: now.Add(remoteTTL)}
}

// forget drops the user's entries: their tokens changed.
func (c *remoteCache) forget(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.user == user {
			delete(c.m, k)
		}
	}
}

// clone copies r, URL included, so that no caller can change what another is given.
func (r Remote) clone() Remote {
	if r.URL != nil {
		u := *r.URL
		r.URL = &u
	}
	return r
}
