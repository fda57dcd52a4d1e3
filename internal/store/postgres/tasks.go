package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// Start tasks are created only with their conversation (CreateConversation).

func queueStartTask(b *pgx.Batch, t conversation.StartTask) error {
	if err := checkTimes(t.CreatedAt, t.UpdatedAt); err != nil {
		return err
	}
	b.Queue(`INSERT INTO start_tasks (id, owner_id, conversation_id, status, detail, sandbox_id, agent_server_url, request, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		t.ID, t.OwnerID, t.ConversationID, string(t.Status), t.Detail, t.SandboxID, t.AgentServerURL,
		rawArg(t.Request), t.CreatedAt, t.UpdatedAt)
	return nil
}

// taskColumns are a start task's columns, its rev (StartTask.Rev) last.
const taskColumns = `id, owner_id, conversation_id, status, detail, sandbox_id, agent_server_url, request, created_at, updated_at, rev`

// scanTask scans taskColumns.
func scanTask(row pgx.Row) (conversation.StartTask, error) {
	var t conversation.StartTask
	var status string
	var request *string
	err := row.Scan(&t.ID, &t.OwnerID, &t.ConversationID, &status, &t.Detail, &t.SandboxID, &t.AgentServerURL,
		&request, &t.CreatedAt, &t.UpdatedAt, &t.Rev)
	if err != nil {
		return conversation.StartTask{}, err
	}
	t.Status = conversation.TaskStatus(status)
	t.Request = fromRaw(request)
	return t, nil
}

func (s *Store) GetStartTask(ctx context.Context, ownerID, id string) (conversation.StartTask, error) {
	t, err := scanTask(s.pool.QueryRow(ctx,
		`SELECT `+taskColumns+` FROM start_tasks WHERE id = $1 AND owner_id = $2`, id, ownerID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return conversation.StartTask{}, fmt.Errorf("get start task %s: %w", id, err)
	}
	return t, nil
}

func taskWhere(ownerID string, f conversation.TaskFilter) where {
	var w where
	w.add("owner_id = " + w.arg(ownerID))
	if f.ConversationID != "" {
		w.add("conversation_id = " + w.arg(f.ConversationID))
	}
	if f.CreatedGTE != nil {
		w.add("created_at >= " + w.arg(timeArg(*f.CreatedGTE)))
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
	w := taskWhere(ownerID, f)
	keyset(&w, col, "id", desc, c)
	columns, byPos := `id, created_at, rev, `+col, true
	if col == "created_at" {
		columns, byPos = `id, created_at, rev`, false
	}
	versions, next, err := pageVersions(ctx, s, byPos, `SELECT `+columns+` FROM start_tasks`+w.String()+order(col, "id", desc), &w, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list start tasks: %w", err)
	}
	return versions, next, nil
}

func (s *Store) CountStartTasks(ctx context.Context, ownerID string, f conversation.TaskFilter) (int, error) {
	w := taskWhere(ownerID, f)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM start_tasks`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count start tasks: %w", err)
	}
	return n, nil
}

// UpdateStartTask is scoped to t.OwnerID: one batch with its BEGIN (Store.writeBatch), then
// the COMMIT. It takes the row lock of the task's conversation first, as every writer of the
// conversation does: the update counts in the conversation's rev (migration 0012), which
// writes the conversation's row, and AddPendingMessage, which holds that lock, waits for a
// share lock on the task.
func (s *Store) UpdateStartTask(ctx context.Context, t conversation.StartTask) error {
	err := checkTimes(t.UpdatedAt)
	if err == nil {
		err = s.writeBatch(ctx, func(b *pgx.Batch) error {
			b.Queue(`SELECT 1 FROM conversations WHERE id = (SELECT conversation_id FROM start_tasks WHERE id = $1 AND owner_id = $2)
				FOR NO KEY UPDATE`, t.ID, t.OwnerID)
			b.Queue(taskUpdate, taskUpdateArgs(t)...)
			return nil
		}, func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			return mustAffect(tag, conversation.ErrNotFound)
		})
	}
	if err != nil {
		return fmt.Errorf("update start task %s: %w", t.ID, err)
	}
	return nil
}

// taskUpdate stores what a start task's step changes, from taskUpdateArgs; the task is
// found by its id and owner.
const taskUpdate = `UPDATE start_tasks SET status = $1, detail = $2, sandbox_id = $3, agent_server_url = $4, updated_at = $5
	WHERE id = $6 AND owner_id = $7`

func taskUpdateArgs(t conversation.StartTask) []any {
	return []any{string(t.Status), t.Detail, t.SandboxID, t.AgentServerURL, t.UpdatedAt, t.ID, t.OwnerID}
}

// PendingStartTasks lists unfinished tasks, oldest first. The status list repeats the partial
// index start_tasks_pending so that PostgreSQL uses it; it must match TaskStatus.Terminal.
func (s *Store) PendingStartTasks(ctx context.Context) ([]conversation.StartTask, error) {
	ts, err := collect(ctx, s.pool, scanTask,
		`SELECT `+taskColumns+` FROM start_tasks WHERE status NOT IN ('READY', 'ERROR') ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list pending start tasks: %w", err)
	}
	return ts, nil
}
