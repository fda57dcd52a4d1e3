package sandboxtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

// testCheck: the backend answers readiness probes (sandbox.Checker). Check passes on a working
// backend, and fails with a *sandbox.CheckError, in words that name no host path, once the
// backend's directory is gone; it passes again when the directory is back.
func (s *suite) testCheck(t *testing.T) {
	if s.opts.New == nil {
		t.Skip("Options.New is not set")
	}
	root, binary := ShortDir(t), s.opts.Binary
	if binary == "" {
		binary = Binary(t)
	}
	b, err := s.opts.New(root, binary)
	if err != nil {
		t.Fatalf("new backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	c, ok := b.(sandbox.Checker)
	if !ok {
		t.Fatalf("the %s backend does not implement sandbox.Checker", b.Name())
	}
	ctx := context.Background()
	if err := c.Check(ctx); err != nil {
		t.Fatalf("check a working backend: %v", err)
	}
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	err = c.Check(ctx)
	var ce *sandbox.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("check without the backend's directory: %v, want a *sandbox.CheckError", err)
	}
	if msg := ce.ClientMessage(); msg == "" || strings.Contains(msg, root) {
		t.Fatalf("the check's message %q is empty or names a host path", msg)
	}
	if err := os.Rename(root+".away", root); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(ctx); err != nil {
		t.Fatalf("check once the directory is back: %v", err)
	}
}
