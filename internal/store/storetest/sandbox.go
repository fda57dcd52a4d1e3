package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

func testSpecs(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSpec(ctx, "nope")
	is(t, "get missing spec", err, sandbox.ErrSpecNotFound)

	var want []sandbox.Spec
	for i, id := range []string{"spec-c", "spec-a", "spec-e", "spec-b", "spec-d"} {
		sp := newSpec(id, i)
		ok(t, "put spec", s.PutSpec(ctx, sp))
		want = append(want, sp)
	}
	got, err := s.GetSpec(ctx, "spec-a")
	ok(t, "get spec", err)
	equal(t, "spec", got, want[1])

	replaced := sandbox.Spec{ID: "spec-a", Command: []string{"agentd"}, Rootfs: "/srv/rootfs", CreatedAt: at(50)}
	ok(t, "replace spec", s.PutSpec(ctx, replaced))
	got, err = s.GetSpec(ctx, "spec-a")
	ok(t, "get replaced spec", err)
	equal(t, "replaced spec", got, replaced)
	want[1] = replaced

	slices.SortFunc(want, func(a, b sandbox.Spec) int { return strings.Compare(a.ID, b.ID) })
	for _, limit := range []int{2, 5, 100} {
		all, pages := allPages(t, limit, func(q paging.Query) ([]sandbox.Spec, string, error) {
			return s.ListSpecs(ctx, q)
		})
		equal(t, fmt.Sprintf("specs with limit %d", limit), all, want)
		if pages != pagesFor(len(want), limit) {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, pagesFor(len(want), limit))
		}
	}
}

func testSandboxes(t *testing.T, s store.Store) {
	ctx := t.Context()
	sb := newSandbox(ownerA, "sb-1", 1, sandbox.StatusStarting)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	fails(t, "create sandbox with a taken id", s.CreateSandbox(ctx, newSandbox(ownerB, "sb-1", 2, sandbox.StatusRunning), 0))

	got, err := s.GetSandbox(ctx, ownerA, sb.ID)
	ok(t, "get sandbox", err)
	equal(t, "sandbox", got, sb)
	got, err = s.GetSandbox(ctx, "", sb.ID)
	ok(t, "get sandbox of any owner", err)
	equal(t, "sandbox of any owner", got, sb)
	_, err = s.GetSandbox(ctx, ownerB, sb.ID)
	is(t, "B gets A's sandbox", err, sandbox.ErrNotFound)
	_, err = s.GetSandbox(ctx, ownerA, "sb-missing")
	is(t, "get missing sandbox", err, sandbox.ErrNotFound)

	// UpdateSandbox writes Status, Detail, Instance and UpdatedAt only.
	upd := sb
	upd.Status = sandbox.StatusRunning
	upd.Detail = "all good"
	upd.Instance.Endpoint = "http://127.0.0.1:4711"
	upd.UpdatedAt = at(5)
	upd.SpecID, upd.Backend, upd.SessionKeySealed, upd.CreatedAt = "other", "docker", []byte("other"), at(99)
	ok(t, "update sandbox", s.UpdateSandbox(ctx, upd, sandbox.StatusStarting))
	want := sb
	want.Status, want.Detail, want.Instance, want.UpdatedAt = upd.Status, upd.Detail, upd.Instance, upd.UpdatedAt
	got, err = s.GetSandbox(ctx, ownerA, sb.ID)
	ok(t, "get updated sandbox", err)
	equal(t, "updated sandbox", got, want)

	byB := want
	byB.OwnerID = ownerB
	byB.Status = sandbox.StatusPaused
	is(t, "B updates A's sandbox", s.UpdateSandbox(ctx, byB, sandbox.StatusRunning), sandbox.ErrNotFound)
	missing := newSandbox(ownerA, "sb-missing", 1, sandbox.StatusRunning)
	is(t, "update missing sandbox", s.UpdateSandbox(ctx, missing, sandbox.StatusStarting), sandbox.ErrNotFound)

	ok(t, "delete sandbox", s.DeleteSandbox(ctx, sb.ID))
	_, err = s.GetSandbox(ctx, ownerA, sb.ID)
	is(t, "get deleted sandbox", err, sandbox.ErrNotFound)
	is(t, "delete deleted sandbox", s.DeleteSandbox(ctx, sb.ID), sandbox.ErrNotFound)
	is(t, "update deleted sandbox", s.UpdateSandbox(ctx, want, sandbox.StatusRunning), sandbox.ErrNotFound)
}

func testSandboxListAndCount(t *testing.T, s store.Store) {
	ctx := t.Context()
	statuses := []sandbox.Status{sandbox.StatusRunning, sandbox.StatusPaused, sandbox.StatusRunning, sandbox.StatusError}
	var mine, theirs []sandbox.Sandbox
	for i := range 9 {
		// Pairs share a creation time: the id breaks the tie.
		sb := newSandbox(ownerA, fmt.Sprintf("sb-a-%d", i), i/2, statuses[i%len(statuses)])
		ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
		mine = append(mine, sb)
		other := newSandbox(ownerB, fmt.Sprintf("sb-b-%d", i), i, sandbox.StatusRunning)
		ok(t, "create sandbox", s.CreateSandbox(ctx, other, 0))
		theirs = append(theirs, other)
	}
	// listed is how a listing returns sbs: newest first, without their instances.
	listed := func(sbs []sandbox.Sandbox) []sandbox.Sandbox {
		sbs = slices.Clone(sbs)
		for i := range sbs {
			sbs[i].Instance = sandbox.Instance{}
		}
		slices.SortFunc(sbs, func(a, b sandbox.Sandbox) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		return sbs
	}
	for _, limit := range []int{1, 4, 9, 100} {
		got, pages := allPages(t, limit, func(q paging.Query) ([]sandbox.Sandbox, string, error) {
			return s.ListSandboxes(ctx, ownerA, q)
		})
		equal(t, fmt.Sprintf("A's sandboxes with limit %d", limit), got, listed(mine))
		if pages != pagesFor(len(mine), limit) {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, pagesFor(len(mine), limit))
		}
	}
	everyone := append(slices.Clone(mine), theirs...)
	got, _ := allPages(t, 5, func(q paging.Query) ([]sandbox.Sandbox, string, error) {
		return s.ListSandboxes(ctx, "", q)
	})
	equal(t, "sandboxes of any owner", got, listed(everyone))

	all, err := s.AllSandboxes(ctx)
	ok(t, "all sandboxes", err)
	byID := func(a, b sandbox.Sandbox) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(all, byID)
	slices.SortFunc(everyone, byID)
	equal(t, "all sandboxes", all, everyone)

	live, err := s.LiveSandboxes(ctx)
	ok(t, "live sandboxes", err)
	slices.SortFunc(live, byID)
	wantLive := slices.DeleteFunc(slices.Clone(everyone), func(sb sandbox.Sandbox) bool {
		return sb.Status != sandbox.StatusStarting && sb.Status != sandbox.StatusRunning && sb.Status != sandbox.StatusPaused
	})
	if len(wantLive) == len(everyone) {
		t.Fatal("the fixture has no sandbox that is not live: LiveSandboxes is not tested")
	}
	equal(t, "live sandboxes", live, wantLive)

	for _, tc := range []struct {
		owner    string
		statuses []sandbox.Status
		want     int
	}{
		{ownerA, []sandbox.Status{sandbox.StatusRunning}, 5},
		{ownerA, []sandbox.Status{sandbox.StatusRunning, sandbox.StatusPaused}, 7},
		{ownerA, []sandbox.Status{sandbox.StatusStarting}, 0},
		{ownerA, nil, 9},
		{ownerB, []sandbox.Status{sandbox.StatusPaused, sandbox.StatusError}, 0},
		{ownerB, []sandbox.Status{sandbox.StatusRunning}, 9},
		{"", []sandbox.Status{sandbox.StatusRunning}, 14},
		{"nobody", nil, 0},
	} {
		n, err := s.CountSandboxes(ctx, tc.owner, tc.statuses...)
		ok(t, "count sandboxes", err)
		if n != tc.want {
			t.Errorf("count sandboxes of %q in %v: %d, want %d", tc.owner, tc.statuses, n, tc.want)
		}
	}
}

func testSandboxCompareAndSet(t *testing.T, s store.Store) {
	ctx := t.Context()
	sb := newSandbox(ownerA, "sb-cas", 1, sandbox.StatusRunning)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))

	stale := sb
	stale.Status = sandbox.StatusError
	is(t, "update from a status the sandbox is not in", s.UpdateSandbox(ctx, stale, sandbox.StatusStarting), sandbox.ErrState)
	got, err := s.GetSandbox(ctx, ownerA, sb.ID)
	ok(t, "get sandbox", err)
	equal(t, "sandbox after a refused update", got, sb)

	// Concurrent transitions from the same status: exactly one wins.
	const n = 8
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			next := sb
			next.Status = sandbox.StatusPaused
			next.Detail = fmt.Sprintf("paused by %d", i)
			next.UpdatedAt = at(10 + i)
			errs[i] = s.UpdateSandbox(ctx, next, sandbox.StatusRunning)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("updates %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, sandbox.ErrState):
			t.Fatalf("losing update %d: got %v, want %v", i, err, sandbox.ErrState)
		}
	}
	if winner < 0 {
		t.Fatal("no concurrent update won")
	}
	got, err = s.GetSandbox(ctx, ownerA, sb.ID)
	ok(t, "get sandbox", err)
	if want := fmt.Sprintf("paused by %d", winner); got.Status != sandbox.StatusPaused || got.Detail != want {
		t.Fatalf("after the race: status %s detail %q, want %s %q", got.Status, got.Detail, sandbox.StatusPaused, want)
	}
}

func testSandboxDeleteKeepsConversations(t *testing.T, s store.Store) {
	ctx := t.Context()
	sb := newSandbox(ownerA, "sb-1", 1, sandbox.StatusRunning)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	c := newConversation(ownerA, "conv-1", 1)
	c.SandboxID = sb.ID
	task := createConversation(t, s, c)

	want := view(c, task)
	want.SandboxStatus = sandbox.StatusRunning
	want.SandboxKeySealed = sb.SessionKeySealed
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "conversation with a running sandbox", got, want)

	ok(t, "delete sandbox", s.DeleteSandbox(ctx, sb.ID))
	want.SandboxStatus = sandbox.StatusMissing
	want.SandboxKeySealed = nil
	got, err = s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation after its sandbox is deleted", err)
	equal(t, "conversation whose sandbox is gone", got, want)
}
