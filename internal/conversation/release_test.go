package conversation

import (
	"fmt"
	"strings"
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

// TestRedactorsBounded: the cached redactors hold at most maxRedactorBytes of secrets, however
// large a user's secrets and however many their conversations; and the bytes counted follow
// the entries replaced and forgotten.
func TestRedactorsBounded(t *testing.T) {
	var c redactors
	big := strings.Repeat("s", 1<<20) // a 1 MiB secret: about 2 MiB a redactor, with its JSON form
	for i := range 200 {
		c.put(fmt.Sprintf("c%d", i), redactorEntry{owner: "alice", r: secret.NewRedactor(big, fmt.Sprintf("key-%06d", i))})
		if c.bytes > maxRedactorBytes {
			t.Fatalf("after %d conversations the redactors hold %d bytes, over %d", i+1, c.bytes, maxRedactorBytes)
		}
		if _, ok := c.byConv[fmt.Sprintf("c%d", i)]; !ok {
			t.Fatalf("conversation %d's redactor is not cached just after it was built", i)
		}
	}
	total := func() int {
		n := 0
		for _, e := range c.byConv {
			n += e.r.Size()
		}
		return n
	}
	last := fmt.Sprintf("c%d", 199)
	c.put(last, redactorEntry{owner: "alice", r: secret.NewRedactor("another-secret")})
	c.put("other", redactorEntry{owner: "bob", r: secret.NewRedactor("bobs-secret")})
	c.forget("c198")
	if c.bytes != total() {
		t.Fatalf("counted %d bytes, the entries hold %d", c.bytes, total())
	}
	c.forgetOwner("alice")
	if len(c.byConv) != 1 || c.bytes != total() {
		t.Fatalf("after alice's secrets changed: %d entries, %d bytes counted of %d", len(c.byConv), c.bytes, total())
	}
}
