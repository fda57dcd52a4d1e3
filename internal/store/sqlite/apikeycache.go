package sqlite

import (
	"context"
	"sync"

	"github.com/agentd/agentd/internal/auth"
)

// apiKeyCacheSize bounds the keys an apiKeyCache holds; when it is full, it starts over.
const apiKeyCacheSize = 1024

// apiKeyCache keeps the API keys found lately with their users, each as of the data version it
// was read at (dataVersion), so that checking a request's key while nothing was committed
// costs a look at the data version instead of a join of two tables: about a tenth of a small
// listing's cost. A key revoked, a user deleted or made no longer admin is a commit, after
// which every key is read again. Only keys found are kept: a caller trying keys cannot fill
// it. Safe for concurrent use.
type apiKeyCache struct {
	mu     sync.Mutex
	byHash map[string]apiKeyEntry
}

type apiKeyEntry struct {
	version int64
	key     auth.APIKey
	user    auth.User
}

// get returns the key of hash and its user if they were read at version.
func (c *apiKeyCache) get(hash []byte, version int64) (apiKeyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byHash[string(hash)]
	return e, ok && e.version == version
}

func (c *apiKeyCache) put(hash []byte, e apiKeyEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byHash == nil || len(c.byHash) >= apiKeyCacheSize {
		c.byHash = make(map[string]apiKeyEntry)
	}
	c.byHash[string(hash)] = e
}

// clear drops every key.
func (c *apiKeyCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byHash = nil
}

// lookupKey is LookupAPIKey through the cache: read is the lookup in the database. When the
// data version is not looked at (Store.keptVersion), it reads and keeps nothing.
func (s *Store) lookupKey(ctx context.Context, hash []byte, read func() (auth.APIKey, auth.User, error)) (auth.APIKey, auth.User, error) {
	version, ok := s.keptVersion(ctx)
	if !ok {
		return read()
	}
	if e, ok := s.keys.get(hash, version); ok {
		return e.key, e.user, nil
	}
	k, u, err := read()
	if err == nil {
		s.keys.put(hash, apiKeyEntry{version: version, key: k, user: u})
	}
	return k, u, err
}
