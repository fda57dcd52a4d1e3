package sqlite_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// Several Stores on one file stand for several agentd processes sharing it: they open (and
// migrate) the new file at once, then all bootstrap at once, and one admin results.
func TestStoresSharingAFile(t *testing.T) {
	const n = 4
	path := filepath.Join(t.TempDir(), "agentd.db")
	stores := make([]*sqlite.Store, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := sqlite.Open(t.Context(), path)
			if err != nil {
				t.Errorf("open %d: %v", i, err)
				return
			}
			t.Cleanup(func() { s.Close() })
			stores[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	created := make([]bool, n)
	for i, s := range stores {
		wg.Go(func() {
			id := fmt.Sprint("admin-", i)
			h := sha256.Sum256([]byte(id))
			now := time.Now().UTC()
			c, err := s.Bootstrap(t.Context(),
				auth.User{ID: id, Name: id, IsAdmin: true, CreatedAt: now},
				auth.APIKey{ID: "key-" + id, UserID: id, Hash: h[:], CreatedAt: now})
			if err != nil {
				t.Errorf("bootstrap %d: %v", i, err)
			}
			created[i] = c
		})
	}
	wg.Wait()
	wins := 0
	for _, c := range created {
		if c {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d bootstraps created an admin, want 1", wins)
	}
	for i, s := range stores {
		users, _, err := s.ListUsers(t.Context(), paging.Query{})
		if err != nil || len(users) != 1 {
			t.Fatalf("store %d sees %d users (%v), want 1", i, len(users), err)
		}
	}
}
