package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store"
)

func testStartTasks(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-1", 1)
	task := createConversation(t, s, c)

	got, err := s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get start task", err)
	equal(t, "start task", got, task)
	_, err = s.GetStartTask(ctx, ownerB, task.ID)
	is(t, "B gets A's task", err, conversation.ErrNotFound)
	_, err = s.GetStartTask(ctx, ownerA, "task-missing")
	is(t, "get missing task", err, conversation.ErrNotFound)

	// UpdateStartTask writes Status, Detail, SandboxID, AgentServerURL and UpdatedAt only.
	upd := task
	upd.Status, upd.Detail, upd.SandboxID, upd.AgentServerURL, upd.UpdatedAt =
		conversation.TaskReady, "ready", "sb-1", "http://127.0.0.1:8000", at(9)
	upd.ConversationID, upd.Request, upd.CreatedAt = "conv-other", json.RawMessage(`{"other": true}`), at(99)
	ok(t, "update start task", s.UpdateStartTask(ctx, upd))
	want := task
	want.Status, want.Detail, want.SandboxID, want.AgentServerURL, want.UpdatedAt =
		upd.Status, upd.Detail, upd.SandboxID, upd.AgentServerURL, upd.UpdatedAt
	got, err = s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get updated task", err)
	equal(t, "updated task", got, want)

	byB := want
	byB.OwnerID, byB.Status = ownerB, conversation.TaskError
	is(t, "B updates A's task", s.UpdateStartTask(ctx, byB), conversation.ErrNotFound)
	missing := want
	missing.ID = "task-missing"
	is(t, "update missing task", s.UpdateStartTask(ctx, missing), conversation.ErrNotFound)
	got, err = s.GetStartTask(ctx, ownerA, task.ID)
	ok(t, "get task", err)
	equal(t, "task after refused updates", got, want)

	tasks, next, err := s.ListStartTasks(ctx, ownerB, conversation.TaskFilter{}, conversation.SortCreatedAt, paging.Query{})
	ok(t, "B lists tasks", err)
	if len(tasks) != 0 || next != "" {
		t.Fatalf("B lists %d tasks, want none", len(tasks))
	}
	n, err := s.CountStartTasks(ctx, ownerB, conversation.TaskFilter{})
	ok(t, "B counts tasks", err)
	if n != 0 {
		t.Fatalf("B counts %d tasks, want 0", n)
	}
}

func testStartTaskSort(t *testing.T, s store.Store) {
	ctx := t.Context()
	var tasks []conversation.StartTask
	for i := range 12 {
		// Creation times tie in threes; update times tie in twos and run the other way.
		c := newConversation(ownerA, fmt.Sprintf("conv-%02d", (i*5)%12), i/3)
		task := createConversation(t, s, c)
		task.Status, task.UpdatedAt = conversation.TaskWaitingForSandbox, at(100-i/2)
		ok(t, "update task", s.UpdateStartTask(ctx, task))
		tasks = append(tasks, task)
		createConversation(t, s, newConversation(ownerB, fmt.Sprintf("conv-b-%02d", i), i))
	}
	sorted := func(key func(conversation.StartTask) time.Time, desc bool) []string {
		ts := slices.Clone(tasks)
		slices.SortFunc(ts, func(a, b conversation.StartTask) int {
			c := cmp.Or(key(a).Compare(key(b)), strings.Compare(a.ID, b.ID))
			if desc {
				return -c
			}
			return c
		})
		return ids(ts, taskID)
	}
	created := func(t conversation.StartTask) time.Time { return t.CreatedAt }
	updated := func(t conversation.StartTask) time.Time { return t.UpdatedAt }
	for _, tc := range []struct {
		sort conversation.TaskSort
		want []string
	}{
		{conversation.SortCreatedAt, sorted(created, false)},
		{conversation.SortCreatedAtDesc, sorted(created, true)},
		{conversation.SortUpdatedAt, sorted(updated, false)},
		{conversation.SortUpdatedAtDesc, sorted(updated, true)},
	} {
		for _, limit := range []int{1, 5, 12, 100} {
			got, pages := allPages(t, limit, func(q paging.Query) ([]conversation.StartTask, string, error) {
				return s.ListStartTasks(ctx, ownerA, conversation.TaskFilter{}, tc.sort, q)
			})
			if got := ids(got, taskID); !slices.Equal(got, tc.want) {
				t.Fatalf("%s with limit %d:\n got %v\nwant %v", tc.sort, limit, got, tc.want)
			}
			if pages != pagesFor(len(tc.want), limit) {
				t.Fatalf("%s with limit %d: %d pages, want %d", tc.sort, limit, pages, pagesFor(len(tc.want), limit))
			}
		}
	}

	for _, tc := range []struct {
		name string
		f    conversation.TaskFilter
		want []string
	}{
		{"conversation", conversation.TaskFilter{ConversationID: "conv-05"}, []string{"task-conv-05"}},
		{"B's conversation", conversation.TaskFilter{ConversationID: "conv-b-01"}, nil},
		{"created gte", conversation.TaskFilter{CreatedGTE: ptr(at(3))}, sorted(created, false)[9:]},
	} {
		got, _, err := s.ListStartTasks(ctx, ownerA, tc.f, conversation.SortCreatedAt, paging.Query{})
		ok(t, "list tasks "+tc.name, err)
		if got := ids(got, taskID); !slices.Equal(got, tc.want) {
			t.Fatalf("tasks by %s: %v, want %v", tc.name, got, tc.want)
		}
		n, err := s.CountStartTasks(ctx, ownerA, tc.f)
		ok(t, "count tasks "+tc.name, err)
		if n != len(tc.want) {
			t.Fatalf("count tasks by %s: %d, want %d", tc.name, n, len(tc.want))
		}
	}
}

func testPendingStartTasks(t *testing.T, s store.Store) {
	ctx := t.Context()
	statuses := []conversation.TaskStatus{
		conversation.TaskWorking, conversation.TaskReady, conversation.TaskPreparingRepository,
		conversation.TaskError, conversation.TaskStartingConversation,
	}
	var want []conversation.StartTask
	for i, st := range statuses {
		for _, owner := range []string{ownerA, ownerB} {
			c := newConversation(owner, fmt.Sprintf("conv-%s-%d", owner, i), i)
			task := createConversation(t, s, c)
			task.Status, task.UpdatedAt = st, at(10+i)
			ok(t, "update task", s.UpdateStartTask(ctx, task))
			if !st.Terminal() {
				want = append(want, task)
			}
		}
	}
	got, err := s.PendingStartTasks(ctx)
	ok(t, "pending start tasks", err)
	byID := func(a, b conversation.StartTask) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	equal(t, "pending start tasks", got, want)
}

func taskID(t conversation.StartTask) string { return t.ID }
