package sandboxtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

// testNew: a backend cannot be made without a root directory or without an agentd binary
// that exists, so a misconfigured server fails at start-up rather than at its first sandbox.
func (s *suite) testNew(t *testing.T) {
	if s.opts.New == nil {
		t.Skip("Options.New is not set")
	}
	missing := filepath.Join(ShortDir(t), "no-such-agentd")
	tests := []struct {
		name, root, binary string
		want               string // in the error
	}{
		{"no root", "", Binary(t), ""},
		{"no binary", ShortDir(t), "", ""},
		{"missing binary", ShortDir(t), missing, missing},
	}
	for _, tt := range tests {
		b, err := s.opts.New(tt.root, tt.binary)
		if err == nil {
			b.Close()
			t.Errorf("New with %s succeeded", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New with %s: %v; want an error naming %q", tt.name, err, tt.want)
		}
	}
}

// testBadIDs: an id that is not a single path element is refused by Start and Destroy; it
// would otherwise end up in paths the backend creates and removes.
func (s *suite) testBadIDs(t *testing.T) {
	b := s.newBackend(t)
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "a/b", "../x"} {
		inst, err := b.Start(ctx, sandbox.StartRequest{ID: id, SessionKey: NewKey(), Spec: s.spec()})
		if err == nil {
			t.Errorf("start with id %q succeeded", id)
			if err := b.Destroy(ctx, inst); err != nil {
				t.Errorf("destroy the sandbox started with id %q: %v", id, err)
			}
		}
		if err := b.Destroy(ctx, sandbox.Instance{ID: id}); err == nil {
			t.Errorf("destroy with id %q succeeded", id)
		}
	}
}

// testStartNeedsKey: a sandbox without a session key would serve anyone; Start refuses it and
// leaves nothing.
func (s *suite) testStartNeedsKey(t *testing.T) {
	b := s.newBackend(t)
	id := NewID()
	if _, err := TryStart(t, b, sandbox.StartRequest{ID: id, Spec: s.spec()}); err == nil {
		t.Fatal("start without a session key succeeded")
	}
	s.checkNothingOf(t, b, id)
}

// testStartKeepsExistingDirectory: a start never takes over, or removes, a directory it did
// not create.
func (s *suite) testStartKeepsExistingDirectory(t *testing.T) {
	if s.opts.SandboxDir == nil {
		t.Skip("Options.SandboxDir is not set: the backend keeps no directory per sandbox on the host")
	}
	b := s.newBackend(t)
	id := NewID()
	dir := s.opts.SandboxDir(id)
	keep := filepath.Join(dir, "keep")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(keep, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := TryStart(t, b, sandbox.StartRequest{ID: id, SessionKey: NewKey(), Spec: s.spec()}); err == nil {
		t.Fatal("start over an existing directory succeeded")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the existing directory was damaged: %v", err)
	}
	if left := processesWith(id); len(left) > 0 {
		t.Fatalf("a start over an existing directory left processes: %q", left)
	}
}

// testStartFailureLeavesNothing: a sandbox that cannot start fails Start with the cause, and
// leaves nothing of what the backend had made of it.
func (s *suite) testStartFailureLeavesNothing(t *testing.T) {
	if s.opts.StartFailure.Apply == nil {
		t.Skip("Options.StartFailure is not set")
	}
	b := s.newBackend(t)
	spec := s.spec()
	s.opts.StartFailure.Apply(&spec)
	id := NewID()
	_, err := TryStart(t, b, sandbox.StartRequest{ID: id, SessionKey: NewKey(), Spec: spec})
	if err == nil {
		t.Fatal("start succeeded")
	}
	if errors.Is(err, sandbox.ErrUnsupported) {
		t.Fatalf("start: %v; the failure must come from starting, not from the spec check", err)
	}
	if !strings.Contains(err.Error(), s.opts.StartFailure.Cause) {
		t.Fatalf("start: %v; want an error containing %q", err, s.opts.StartFailure.Cause)
	}
	s.checkNothingOf(t, b, id)
}

// checkNothingOf checks that nothing is left of sandbox id, whose start failed: no process
// names it, b does not list it, it has no directory, and Leftovers finds nothing.
func (s *suite) checkNothingOf(t *testing.T, b sandbox.Backend, id string) {
	t.Helper()
	if left := processesWith(id); len(left) > 0 {
		t.Fatalf("a failed start left processes: %q", left)
	}
	if slices.Contains(listIDs(t, b), id) {
		t.Fatal("a sandbox whose start failed is listed")
	}
	if s.opts.SandboxDir != nil {
		if _, err := os.Stat(s.opts.SandboxDir(id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a failed start left its directory: %v", err)
		}
	}
	if s.opts.Leftovers != nil {
		if left := s.opts.Leftovers(sandbox.Instance{ID: id}); len(left) > 0 {
			t.Fatalf("left after a failed start: %q", left)
		}
	}
}
