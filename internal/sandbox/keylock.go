package sandbox

import "sync"

// keyLock is a set of mutexes, one per key, made on demand and dropped when unused. The
// service holds one per sandbox id, so operations on one sandbox run one at a time while
// different sandboxes proceed in parallel.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyLockEntry
}

type keyLockEntry struct {
	mu    sync.Mutex
	users int
}

// lock locks key and returns the function that unlocks it.
func (k *keyLock) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLockEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyLockEntry{}
		k.locks[key] = e
	}
	e.users++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.users--; e.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
