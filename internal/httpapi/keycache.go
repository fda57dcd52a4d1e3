package httpapi

import "sync"

// keyCacheSize bounds the cache; it is emptied when full (sandboxes come and go).
const keyCacheSize = 4096

// keyCache remembers opened sandbox session keys by their sealed form, so a page of
// conversations sharing a sandbox opens its key once, not once per row.
type keyCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *keyCache) get(sealed []byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[string(sealed)]
	return k, ok
}

func (c *keyCache) put(sealed []byte, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= keyCacheSize {
		c.m = make(map[string]string)
	}
	c.m[string(sealed)] = key
}

func (c *keyCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
