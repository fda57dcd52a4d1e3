package conversation

import (
	"testing"

	"github.com/agentd/agentd/internal/secret"
)

// TestReleaseMemoryEmptiesRedactors: the release drops every cached redactor (they hold the
// secrets of the conversations that ran); the revisions of the owners' secrets are the
// store's, which the release leaves alone.
func TestReleaseMemoryEmptiesRedactors(t *testing.T) {
	s := &Service{}
	s.red.byConv = map[string]redactorEntry{"c1": {owner: "alice", rev: 1, r: secret.NewRedactor("token-1234")}}
	s.ReleaseMemory()
	if n := len(s.red.byConv); n != 0 {
		t.Errorf("%d redactors are still cached", n)
	}
}
