package storetest

import (
	"context"
	"testing"

	"github.com/agentd/agentd/internal/store"
)

// testPing: an open store answers Ping; a closed one does not, and says so rather than
// hanging.
func testPing(t *testing.T, s store.Store) {
	ctx := context.Background()
	ok(t, "ping an open store", s.Ping(ctx))
	ok(t, "close", s.Close())
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping a closed store: no error")
	}
}
