package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// testConversationVersions: a listing in two halves (ListConversationVersions, then
// ConversationsAt) lists what ListConversations lists, page for page and cursor for cursor,
// and so do the start task listings, in every order (ListStartTaskVersions, StartTasksAt),
// and the sandbox listing (ListSandboxVersions, SandboxesAt);
// ConversationsAt reads none of another owner's conversations; at a version it does not hold,
// it leaves out a conversation deleted since and reads one changed since as it is now, at a
// new rev.
func testConversationVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 25 {
		// Every two conversations share a creation time.
		createConversation(t, s, newConversation(ownerA, fmt.Sprintf("cv-%02d", (i*7)%25), i/2))
	}
	createConversation(t, s, newConversation(ownerB, "cv-b", 3))
	listed := func(v conversation.View) paging.Listed {
		return paging.Listed{ID: v.ID, Created: listingcache.TimeKey(v.CreatedAt), Rev: v.Rev}
	}
	var first []paging.Listed
	q, pages := paging.Query{Limit: 10}, 0
	for {
		vs, next, err := s.ListConversations(ctx, ownerA, conversation.Filter{}, q)
		ok(t, "list conversations", err)
		ls, lsNext, err := s.ListConversationVersions(ctx, ownerA, conversation.Filter{}, q)
		ok(t, "list conversation versions", err)
		if lsNext != next || len(ls) != len(vs) {
			t.Fatalf("page %d: %d versions and next page %q, the listing has %d conversations and next page %q", pages, len(ls), lsNext, len(vs), next)
		}
		for i, v := range vs {
			if ls[i] != listed(v) {
				t.Fatalf("page %d, row %d: version %+v, the listing's conversation is %+v", pages, i, ls[i], listed(v))
			}
		}
		at, err := s.ConversationsAt(ctx, ownerA, ls)
		ok(t, "conversations at versions", err)
		equal(t, fmt.Sprintf("page %d read at its versions", pages), at, vs)
		if pages == 0 {
			first = ls
		}
		pages++
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if pages != 3 {
		t.Fatalf("%d pages of 25 conversations at 10 a page, want 3", pages)
	}

	// The start tasks of the conversations, likewise, in each order.
	for _, sort := range []conversation.TaskSort{conversation.SortCreatedAtDesc, conversation.SortCreatedAt, conversation.SortUpdatedAt, conversation.SortUpdatedAtDesc} {
		q, pages := paging.Query{Limit: 10}, 0
		for {
			ts, next, err := s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, sort, q)
			ok(t, "list start tasks", err)
			ls, lsNext, err := s.ListStartTaskVersions(ctx, ownerA, conversation.TaskFilter{}, sort, q)
			ok(t, "list start task versions", err)
			if lsNext != next || len(ls) != len(ts) {
				t.Fatalf("%s, page %d: %d versions and next page %q, the listing has %d start tasks and next page %q", sort, pages, len(ls), lsNext, len(ts), next)
			}
			for i, task := range ts {
				if want := (paging.Listed{ID: task.ID, Created: listingcache.TimeKey(task.CreatedAt), Rev: task.Rev}); ls[i] != want {
					t.Fatalf("%s, page %d, row %d: version %+v, the listing's start task is %+v", sort, pages, i, ls[i], want)
				}
			}
			at, err := s.StartTasksAt(ctx, ownerA, ls)
			ok(t, "start tasks at versions", err)
			equal(t, fmt.Sprintf("%s, page %d read at its versions", sort, pages), at, ts)
			pages++
			if next == "" {
				break
			}
			q.Cursor = next
		}
		if pages != 3 {
			t.Fatalf("%s: %d pages of 25 start tasks at 10 a page, want 3", sort, pages)
		}
	}
	tasks, _, err := s.ListStartTaskVersions(ctx, ownerA, conversation.TaskFilter{}, conversation.SortCreatedAtDesc, paging.Query{Limit: 1})
	ok(t, "list start task versions", err)
	theirTasks, _, err := s.ListStartTaskVersions(ctx, ownerB, conversation.TaskFilter{}, conversation.SortCreatedAtDesc, paging.Query{})
	ok(t, "list B's start task versions", err)
	if len(tasks) != 1 || len(theirTasks) != 1 {
		t.Fatalf("%d and %d start task versions, want 1 of A's and B's one", len(tasks), len(theirTasks))
	}
	gotTasks, err := s.StartTasksAt(ctx, ownerA, []paging.Listed{theirTasks[0], tasks[0]})
	ok(t, "start tasks at versions", err)
	if len(gotTasks) != 1 || gotTasks[0].ID != tasks[0].ID {
		t.Fatalf("A read %d start tasks at B's task's version and A's, want A's %s alone", len(gotTasks), tasks[0].ID)
	}

	// Sandboxes likewise.
	for i := range 25 {
		ok(t, "create sandbox", s.CreateSandbox(ctx, newSandbox(ownerA, fmt.Sprintf("sbv-%02d", (i*7)%25), i/2, sandbox.StatusRunning), 0))
	}
	ok(t, "create B's sandbox", s.CreateSandbox(ctx, newSandbox(ownerB, "sbv-b", 3, sandbox.StatusRunning), 0))
	q, pages = paging.Query{Limit: 10}, 0
	var firstSandboxes []paging.Listed
	for {
		sbs, next, err := s.ListSandboxes(ctx, ownerA, q)
		ok(t, "list sandboxes", err)
		ls, lsNext, err := s.ListSandboxVersions(ctx, ownerA, q)
		ok(t, "list sandbox versions", err)
		if lsNext != next || len(ls) != len(sbs) {
			t.Fatalf("sandboxes, page %d: %d versions and next page %q, the listing has %d sandboxes and next page %q", pages, len(ls), lsNext, len(sbs), next)
		}
		for i, sb := range sbs {
			if want := (paging.Listed{ID: sb.ID, Created: listingcache.TimeKey(sb.CreatedAt), Rev: sb.Rev}); ls[i] != want {
				t.Fatalf("sandboxes, page %d, row %d: version %+v, the listing's sandbox is %+v", pages, i, ls[i], want)
			}
		}
		at, err := s.SandboxesAt(ctx, ownerA, ls)
		ok(t, "sandboxes at versions", err)
		equal(t, fmt.Sprintf("sandboxes, page %d read at its versions", pages), at, sbs)
		for i := range at {
			if at[i].Rev != sbs[i].Rev {
				t.Fatalf("sandbox %s read at rev %d, listed at rev %d", at[i].ID, at[i].Rev, sbs[i].Rev)
			}
		}
		if pages == 0 {
			firstSandboxes = ls
		}
		pages++
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if pages != 3 {
		t.Fatalf("%d pages of 25 sandboxes at 10 a page, want 3", pages)
	}
	theirSandboxes, _, err := s.ListSandboxVersions(ctx, ownerB, paging.Query{})
	ok(t, "list B's sandbox versions", err)
	gotSandboxes, err := s.SandboxesAt(ctx, ownerA, []paging.Listed{theirSandboxes[0], firstSandboxes[0]})
	ok(t, "sandboxes at versions", err)
	if len(gotSandboxes) != 1 || gotSandboxes[0].ID != firstSandboxes[0].ID {
		t.Fatalf("A read %d sandboxes at B's sandbox's version and A's, want A's %s alone", len(gotSandboxes), firstSandboxes[0].ID)
	}
	// A sandbox paused since it was listed, read at a version the store cannot hold, is read
	// as it is now, at a new rev.
	paused, err := s.GetSandbox(ctx, ownerA, firstSandboxes[1].ID)
	ok(t, "get sandbox", err)
	paused.Status = sandbox.StatusPaused
	ok(t, "pause", s.UpdateSandbox(ctx, paused, sandbox.StatusRunning))
	unheldSandbox := firstSandboxes[1]
	unheldSandbox.Rev += 1000
	gotSandboxes, err = s.SandboxesAt(ctx, ownerA, []paging.Listed{unheldSandbox})
	ok(t, "sandboxes at versions", err)
	if len(gotSandboxes) != 1 || gotSandboxes[0].Status != sandbox.StatusPaused || gotSandboxes[0].Rev == firstSandboxes[1].Rev {
		t.Fatalf("paused sandbox read as %+v, want PAUSED at a rev other than %d", gotSandboxes, firstSandboxes[1].Rev)
	}

	// Another owner's conversation, named beside the owner's, is left out.
	theirs, _, err := s.ListConversationVersions(ctx, ownerB, conversation.Filter{}, paging.Query{})
	ok(t, "list B's versions", err)
	if len(theirs) != 1 {
		t.Fatalf("B has %d conversation versions, want 1", len(theirs))
	}
	got, err := s.ConversationsAt(ctx, ownerA, []paging.Listed{theirs[0], first[0]})
	ok(t, "conversations at versions", err)
	if len(got) != 1 || got[0].ID != first[0].ID {
		t.Fatalf("A read %v at B's conversation's version and A's, want A's %s alone", ids(got, viewID), first[0].ID)
	}

	// Deleted and changed since they were listed: read at versions that the store cannot hold
	// (as a listing on another replica named them), they are read as they are now.
	ok(t, "delete", s.DeleteConversation(ctx, ownerA, first[0].ID))
	title := "renamed since listed"
	ok(t, "rename", s.PatchConversation(ctx, ownerA, first[1].ID, conversation.Patch{Title: &title}, time.Now()))
	unheld := make([]paging.Listed, 3)
	for i := range unheld {
		unheld[i] = first[i]
		unheld[i].Rev += 1000
	}
	got, err = s.ConversationsAt(ctx, ownerA, unheld)
	ok(t, "conversations at versions", err)
	if len(got) != 2 || got[0].ID != first[1].ID || got[1].ID != first[2].ID {
		t.Fatalf("read %v after %s was deleted, want %s and %s", ids(got, viewID), first[0].ID, first[1].ID, first[2].ID)
	}
	if got[0].Title != title || got[0].Rev == first[1].Rev {
		t.Fatalf("renamed conversation read with title %q at rev %d (listed at rev %d), want %q at a new rev", got[0].Title, got[0].Rev, first[1].Rev, title)
	}
	if got[1].Rev != first[2].Rev {
		t.Fatalf("unchanged conversation read at rev %d, listed at rev %d", got[1].Rev, first[2].Rev)
	}
	// At the versions listed, each is read as it was then, where the store still holds that
	// version, or as it is now: its rev always names what it holds.
	got, err = s.ConversationsAt(ctx, ownerA, first[1:2])
	ok(t, "conversations at versions", err)
	if len(got) != 1 || (got[0].Title == title) == (got[0].Rev == first[1].Rev) {
		t.Fatalf("renamed conversation read at its listed version as %+v, want its title then at rev %d or %q at a new rev", got, first[1].Rev, title)
	}
}
