package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// Start tasks are created only with their conversation (CreateConversation).

func insertStartTask(ctx context.Context, tx *sql.Tx, t conversation.StartTask) error {
	if err := checkTimes(t.CreatedAt, t.UpdatedAt); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO start_tasks (id, owner_id, conversation_id, status, detail, sandbox_id, agent_server_url, request, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.OwnerID, t.ConversationID, string(t.Status), t.Detail, t.SandboxID, t.AgentServerURL,
		rawArg(t.Request), nanos(t.CreatedAt), nanos(t.UpdatedAt))
	if isUnique(err) {
		return fmt.Errorf("start task %s already exists", t.ID)
	}
	return err
}

// taskColumns are a start task's columns, its rev (StartTask.Rev) last.
const taskColumns = `id, owner_id, conversation_id, status, detail, sandbox_id, agent_server_url, request, created_at, updated_at, rev`

// scanTask scans taskColumns.
func scanTask(sc scanner) (conversation.StartTask, error) {
	var t conversation.StartTask
	var request sql.NullString
	var created, updated int64
	err := sc.Scan(&t.ID, &t.OwnerID, &t.ConversationID, &t.Status, &t.Detail, &t.SandboxID, &t.AgentServerURL,
		&request, &created, &updated, &t.Rev)
	if err != nil {
		return conversation.StartTask{}, err
	}
	t.Request = fromRaw(request)
	t.CreatedAt = fromNanos(created)
	t.UpdatedAt = fromNanos(updated)
	return t, nil
}

func (s *Store) GetStartTask(ctx context.Context, ownerID, id string) (conversation.StartTask, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx,
		`SELECT `+taskColumns+` FROM start_tasks WHERE id = ? AND owner_id = ?`, id, ownerID))
	if errors.Is(err, sql.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return conversation.StartTask{}, fmt.Errorf("get start task %s: %w", id, err)
	}
	return t, nil
}

// taskWhere is the conditions of a filter, for a listing sorted by sortCol ("" for a count).
func taskWhere(ownerID string, f conversation.TaskFilter, sortCol string) where {
	var w where
	if f.ConversationID != "" {
		// One conversation's tasks are few: read them through its index (the unary + keeps
		// the owner's indexes from being chosen), sorted in memory.
		w.add("+owner_id = ?", ownerID)
		w.add("conversation_id = ?", f.ConversationID)
	} else {
		w.add("owner_id = ?", ownerID)
	}
	if f.CreatedGTE != nil {
		if sortCol == "updated_at" {
			// The unary + keeps SQLite from reading by created_at and sorting the rows it
			// found: it reads the owner's tasks in the listing's order and stops at a page.
			w.add("+created_at >= ?", nanos(*f.CreatedGTE))
		} else {
			w.add("created_at >= ?", nanos(*f.CreatedGTE))
		}
	}
	return w
}

// taskOrder maps a TaskSort to the column it sorts on and its direction. The empty sort is
// CREATED_AT_DESC, the default of OpenHands.
func taskOrder(sort conversation.TaskSort) (col string, desc bool, err error) {
	switch sort {
	case conversation.SortCreatedAt:
		return "created_at", false, nil
	case conversation.SortCreatedAtDesc, "":
		return "created_at", true, nil
	case conversation.SortUpdatedAt:
		return "updated_at", false, nil
	case conversation.SortUpdatedAtDesc:
		return "updated_at", true, nil
	}
	return "", false, fmt.Errorf("unknown start task sort %q", sort)
}

// ListStartTasks pages with a cursor on (sort time, id); a cursor is only meaningful with the
// sort that produced it.
func (s *Store) ListStartTasks(ctx context.Context, ownerID string, f conversation.TaskFilter, sort conversation.TaskSort, q paging.Query) ([]conversation.StartTask, string, error) {
	versions, next, err := s.taskVersions(ctx, ownerID, f, sort, q)
	if err != nil {
		return nil, "", err
	}
	ts, err := at(ctx, s, listedTasks, versions)
	if err != nil {
		return nil, "", fmt.Errorf("list start tasks: %w", err)
	}
	return ts, next, nil
}

func (s *Store) ListStartTaskVersions(ctx context.Context, ownerID string, f conversation.TaskFilter, sort conversation.TaskSort, q paging.Query) ([]paging.Listed, string, error) {
	versions, next, err := s.taskVersions(ctx, ownerID, f, sort, q)
	if err != nil {
		return nil, "", err
	}
	return listingcache.Listed(versions), next, nil
}

func (s *Store) StartTasksAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]conversation.StartTask, error) {
	return ownedAt(ctx, s, listedTasks, ownerID, ls, "start tasks")
}

// taskVersions reads the versions of a page of the owner's start tasks, and the next page's
// cursor.
func (s *Store) taskVersions(ctx context.Context, ownerID string, f conversation.TaskFilter, sort conversation.TaskSort, q paging.Query) ([]listingcache.Version[string], string, error) {
	q = q.Normalize()
	col, desc, err := taskOrder(sort)
	if err != nil {
		return nil, "", fmt.Errorf("list start tasks: %w", err)
	}
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list start tasks: %w", err)
	}
	w := taskWhere(ownerID, f, col)
	keyset(&w, col, "id", desc, c)
	columns, scan := `id, created_at, rev, `+col, scanRowVersion
	if col == "created_at" {
		columns, scan = `id, created_at, rev`, scanCreatedVersion
	}
	versions, next, err := listVersions(ctx, s, scan, `SELECT `+columns+` FROM start_tasks`+w.String()+order(col, "id", desc), w.args, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list start tasks: %w", err)
	}
	return versions, next, nil
}

func (s *Store) CountStartTasks(ctx context.Context, ownerID string, f conversation.TaskFilter) (int, error) {
	w := taskWhere(ownerID, f, "")
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM start_tasks`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count start tasks: %w", err)
	}
	return n, nil
}

// UpdateStartTask is scoped to t.OwnerID.
func (s *Store) UpdateStartTask(ctx context.Context, t conversation.StartTask) error {
	err := checkTimes(t.UpdatedAt)
	if err == nil {
		var res sql.Result
		res, err = s.one.ExecContext(ctx, `UPDATE start_tasks SET `+taskUpdate+` WHERE id = ? AND owner_id = ?`,
			append(taskUpdateArgs(t), t.ID, t.OwnerID)...)
		if err == nil {
			err = mustAffect(res, conversation.ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("update start task %s: %w", t.ID, err)
	}
	return nil
}

// taskUpdate sets what a start task's step changes, from taskUpdateArgs.
const taskUpdate = `status = ?, detail = ?, sandbox_id = ?, agent_server_url = ?, updated_at = ?`

func taskUpdateArgs(t conversation.StartTask) []any {
	return []any{string(t.Status), t.Detail, t.SandboxID, t.AgentServerURL, nanos(t.UpdatedAt)}
}

// PendingStartTasks lists unfinished tasks, oldest first. The status list repeats the partial
// index start_tasks_pending so that SQLite uses it; it must match TaskStatus.Terminal.
func (s *Store) PendingStartTasks(ctx context.Context) ([]conversation.StartTask, error) {
	ts, err := collect(ctx, s.r, scanTask,
		`SELECT `+taskColumns+` FROM start_tasks WHERE status NOT IN ('READY', 'ERROR') ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list pending start tasks: %w", err)
	}
	return ts, nil
}
