package conversation

import (
	"testing"

	"github.com/agentd/agentd/internal/secret"
)

// TestReleaseMemoryEmptiesRedactors: the release drops every cached redactor (they hold the
// secrets of the conversations that ran) and keeps the owners' secret generations, so a
// redactor built before a change of secrets is never cached afterwards.
func TestReleaseMemoryEmptiesRedactors(t *testing.T) {
	s := &Service{}
	s.SecretsChanged("alice")
	s.red.byConv = map[string]redactorEntry{"c1": {owner: "alice", gen: 1, r: secret.NewRedactor("token-1234")}}
	s.ReleaseMemory()
	if n := len(s.red.byConv); n != 0 {
		t.Errorf("%d redactors are still cached", n)
	}
	if g := s.red.gen["alice"]; g != 1 {
		t.Errorf("alice's generation is %d after the release, want 1", g)
	}
}
