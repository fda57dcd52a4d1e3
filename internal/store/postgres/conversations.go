package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// ownerID scopes every conversation and start task call exactly: unlike sandboxes, an empty
// ownerID matches no one.

// CreateConversation inserts c, task and first in one transaction, its statements sent in one
// batch with its BEGIN (Store.writeBatch), then the COMMIT. A zero task (empty ID) is not
// stored. Empty owner and conversation ids of task and events are taken from c; ids that
// differ from c's are an error. On success the elements of first get their Seq, as
// AppendEvents does. No append to the conversation can run before this one commits
// (the conversation is not there for it to lock), so the first events need no lock. The task
// goes in before the conversation: the trigger that counts a new task in its conversation's
// rev (migration 0012) then finds no row to update, where it would write the new row twice.
// The claim's lease goes in after the conversation, which it refers to.
func (s *Store) CreateConversation(ctx context.Context, c conversation.Conversation, task conversation.StartTask, first []event.Event, claim conversation.Claim) error {
	evs := slices.Clone(first)
	var seqs []int64
	err := s.writeBatch(ctx, func(b *pgx.Batch) error {
		if task.ID != "" {
			if err := adopt(&task.OwnerID, c.OwnerID, "start task owner"); err != nil {
				return err
			}
			if err := adopt(&task.ConversationID, c.ID, "start task conversation"); err != nil {
				return err
			}
			if err := queueStartTask(b, task); err != nil {
				return err
			}
		}
		if err := queueConversation(b, c); err != nil {
			return err
		}
		if claim.Holder != "" {
			b.Queue(`INSERT INTO conversation_leases (conversation_id, holder, node, expires_at)
				VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')`, c.ID, claim.Holder, claim.Node, claim.TTL.Microseconds())
		}
		for i := range evs {
			if err := adopt(&evs[i].ConversationID, c.ID, "event conversation"); err != nil {
				return err
			}
		}
		return queueEvents(b, evs)
	}, func(br pgx.BatchResults) error {
		if task.ID != "" {
			if _, err := br.Exec(); err != nil {
				if isUnique(err) {
					return fmt.Errorf("start task %s already exists", task.ID)
				}
				return err
			}
		}
		if _, err := br.Exec(); err != nil {
			if isUnique(err) {
				return conversation.ErrExists
			}
			return err
		}
		if claim.Holder != "" {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("lease: %w", err)
			}
		}
		var err error
		seqs, err = readEvents(br, evs)
		return err
	})
	if err != nil {
		return fmt.Errorf("create conversation %s: %w", c.ID, err)
	}
	for i := range first {
		first[i].Seq = seqs[i]
	}
	return nil
}

// adopt sets an empty *field to want and rejects a different value.
func adopt(field *string, want, what string) error {
	switch *field {
	case "":
		*field = want
	case want:
	default:
		return fmt.Errorf("%s is %q, not %q", what, *field, want)
	}
	return nil
}

func queueConversation(b *pgx.Batch, c conversation.Conversation) error {
	if err := checkTimes(c.CreatedAt, c.UpdatedAt); err != nil {
		return err
	}
	prs, err := jsonArg(c.PRNumbers)
	if err != nil {
		return err
	}
	secretNames, err := jsonArg(orEmptyNames(c.SecretNames))
	if err != nil {
		return err
	}
	policy := ""
	if !c.ConfirmationPolicy.IsNever() {
		b, err := json.Marshal(c.ConfirmationPolicy)
		if err != nil {
			return err
		}
		policy = string(b)
	}
	tagMap := c.Tags
	if tagMap == nil {
		tagMap = map[string]string{}
	}
	tags, err := jsonArg(tagMap)
	if err != nil {
		return err
	}
	b.Queue(`INSERT INTO conversations (id, owner_id, sandbox_id, version, title, title_fold, selected_repository,
			selected_branch, git_provider, trigger_name, pr_numbers, llm_model, metrics, parent_id, request_sealed,
			created_at, updated_at, execution_status, secret_names, secrets_sealed, public, tags, title_by_user, confirmation_policy,
			work_dir, waiting_for_node)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)`,
		c.ID, c.OwnerID, c.SandboxID, c.Version, c.Title, fold(c.Title), c.SelectedRepository,
		c.SelectedBranch, c.GitProvider, c.Trigger, prs, c.LLMModel, rawArg(c.Metrics), c.ParentID,
		blobArg(c.RequestSealed), c.CreatedAt, c.UpdatedAt, c.ExecutionStatus,
		secretNames, blobArg(c.SecretsSealed), c.Public, tags, c.TitleByUser, policy, c.WorkDir, c.WaitingForNode)
	return nil
}

// fold is the case folding of TitleContains, applied to titles when stored and to the search
// text when searching: Go's, as the SQLite store's, so that both match the same titles.
func fold(s string) string { return strings.ToLower(s) }

// viewSelect reads a conversation with the status of its sandbox (if the owner still has it)
// and of its most recent start task. listSelect is the same without the sealed request, which
// listings never use and which may be large (a replay). Both read the conversation's rev
// (View.Rev; see listingcache.go).
const (
	viewSelect = `SELECT c.id, c.owner_id, c.sandbox_id, c.version, c.title, c.selected_repository,
	c.selected_branch, c.git_provider, c.trigger_name, c.pr_numbers, c.llm_model, c.metrics, c.parent_id,
	c.request_sealed, ` + viewRest + viewFrom
	listSelect = `SELECT c.id, c.owner_id, c.sandbox_id, c.version, c.title, c.selected_repository,
	c.selected_branch, c.git_provider, c.trigger_name, c.pr_numbers, c.llm_model, c.metrics, c.parent_id,
	NULL::bytea, ` + viewRest + viewFrom
	viewRest = `c.secret_names, c.secrets_sealed, c.public, c.tags, c.title_by_user, c.created_at, c.updated_at,
	c.execution_status, c.confirmation_policy, c.work_dir, c.waiting_for_node, s.status, s.session_key_sealed, t.status, t.detail, c.rev`
	viewFrom = `
FROM conversations c
LEFT JOIN sandboxes s ON c.sandbox_id <> '' AND s.id = c.sandbox_id AND s.owner_id = c.owner_id
LEFT JOIN LATERAL (
	SELECT status, detail FROM start_tasks
	WHERE conversation_id = c.id AND owner_id = c.owner_id
	ORDER BY created_at DESC, id DESC LIMIT 1) t ON true`
)

// scanView scans the columns of viewSelect or listSelect.
func scanView(row pgx.Row) (conversation.View, error) {
	var v conversation.View
	c := &v.Conversation
	var prs, secretNames, tags, policy string
	var metrics, sbStatus, taskStatus, taskDetail *string
	err := row.Scan(&c.ID, &c.OwnerID, &c.SandboxID, &c.Version, &c.Title, &c.SelectedRepository,
		&c.SelectedBranch, &c.GitProvider, &c.Trigger, &prs, &c.LLMModel, &metrics, &c.ParentID,
		&c.RequestSealed, &secretNames, &c.SecretsSealed, &c.Public, &tags, &c.TitleByUser, &c.CreatedAt, &c.UpdatedAt,
		&c.ExecutionStatus, &policy, &c.WorkDir, &c.WaitingForNode, &sbStatus, &v.SandboxKeySealed, &taskStatus, &taskDetail, &v.Rev)
	if err != nil {
		return conversation.View{}, err
	}
	if c.PRNumbers, err = fromJSONList[int](prs); err != nil {
		return conversation.View{}, fmt.Errorf("decode pr numbers of conversation %s: %w", c.ID, err)
	}
	if c.SecretNames, err = fromJSONList[string](secretNames); err != nil {
		return conversation.View{}, fmt.Errorf("decode secret names of conversation %s: %w", c.ID, err)
	}
	if c.Tags, err = fromJSONMap[string, string](tags); err != nil {
		return conversation.View{}, fmt.Errorf("decode tags of conversation %s: %w", c.ID, err)
	}
	if len(c.SecretNames) == 0 {
		c.SecretNames = nil
	}
	if policy != "" {
		if err := json.Unmarshal([]byte(policy), &c.ConfirmationPolicy); err != nil {
			return conversation.View{}, fmt.Errorf("decode confirmation policy of conversation %s: %w", c.ID, err)
		}
	}
	c.Metrics = fromRaw(metrics)
	v.SandboxStatus = sandbox.StatusMissing
	if sbStatus != nil {
		v.SandboxStatus = sandbox.Status(*sbStatus)
	}
	if taskStatus != nil {
		v.TaskStatus = conversation.TaskStatus(*taskStatus)
	}
	if taskDetail != nil {
		v.TaskDetail = *taskDetail
	}
	return v, nil
}

func (s *Store) GetConversation(ctx context.Context, ownerID, id string) (conversation.View, error) {
	v, err := scanView(s.pool.QueryRow(ctx, viewSelect+` WHERE c.id = $1 AND c.owner_id = $2`, id, ownerID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return conversation.View{}, fmt.Errorf("get conversation %s: %w", id, err)
	}
	return v, nil
}

// UpdateConversation is scoped to c.OwnerID.
func (s *Store) UpdateConversation(ctx context.Context, c conversation.Conversation) error {
	err := checkTimes(c.UpdatedAt)
	if err == nil {
		err = s.execOne(ctx, conversation.ErrNotFound,
			`UPDATE conversations SET sandbox_id = $1, title = $2, title_fold = $3, metrics = $4, llm_model = $5, updated_at = $6
			WHERE id = $7 AND owner_id = $8`,
			c.SandboxID, c.Title, fold(c.Title), rawArg(c.Metrics), c.LLMModel, c.UpdatedAt, c.ID, c.OwnerID)
	}
	if err != nil {
		return fmt.Errorf("update conversation %s: %w", c.ID, err)
	}
	return nil
}

// AddPRNumber reads and rewrites the list under the conversation's row lock, so that two
// numbers added at once both stay.
func (s *Store) AddPRNumber(ctx context.Context, ownerID, id string, number int, at time.Time) error {
	err := checkTimes(at)
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			var raw string
			err := tx.QueryRow(ctx, `SELECT pr_numbers FROM conversations WHERE id = $1 AND owner_id = $2 FOR NO KEY UPDATE`,
				id, ownerID).Scan(&raw)
			if errors.Is(err, pgx.ErrNoRows) {
				return conversation.ErrNotFound
			}
			if err != nil {
				return err
			}
			var prs []int
			if err := json.Unmarshal([]byte(raw), &prs); err != nil {
				return fmt.Errorf("decode pr numbers: %w", err)
			}
			if !slices.Contains(prs, number) {
				prs = append(prs, number)
			}
			b, err := jsonArg(prs)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE conversations SET pr_numbers = $1, updated_at = $2 WHERE id = $3`, b, at, id)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("add pr number to conversation %s: %w", id, err)
	}
	return nil
}

// DeleteConversation deletes the conversation with its events, pending messages and start
// tasks (its skills go by ON DELETE CASCADE). It first locks the conversation's row, which
// waits for the appends under way and makes later ones find no conversation.
func (s *Store) DeleteConversation(ctx context.Context, ownerID, id string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 AND owner_id = $2 FOR UPDATE`, id, ownerID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return conversation.ErrNotFound
		}
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, q := range []string{
			`DELETE FROM conversation_commands WHERE conversation_id = $1`,
			`DELETE FROM conversation_leases WHERE conversation_id = $1`,
			`DELETE FROM events WHERE conversation_id = $1`,
			`DELETE FROM pending_messages WHERE conversation_id = $1`,
			`DELETE FROM start_tasks WHERE conversation_id = $1`,
			`DELETE FROM conversations WHERE id = $1`,
		} {
			b.Queue(q, id)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	return nil
}

// RecordEvents appends and updates in one transaction, under the conversation's row lock (see
// events.go), sent in one batch with its BEGIN: the lock, whose conditions are checked once
// the batch has run (a record that fails them is rolled back), then the record's statements.
// Seq is set on evs once it committed.
func (s *Store) RecordEvents(ctx context.Context, conversationID string, evs []event.Event, u conversation.StateUpdate) (int64, error) {
	var seqs []int64
	var prev int64
	err := checkTimes(u.UpdatedAt)
	if err == nil && u.Task != nil {
		if err = checkTimes(u.Task.UpdatedAt); err != nil {
			err = fmt.Errorf("start task %s: %w", u.Task.ID, err)
		}
	}
	if err == nil {
		seqs, prev, err = s.record(ctx, conversationID, evs, u, nil, nil)
	}
	if err != nil {
		return 0, fmt.Errorf("record events of conversation %s: %w", conversationID, err)
	}
	for i := range evs {
		evs[i].Seq = seqs[i]
	}
	return prev, nil
}

// record runs RecordEvents' transaction (Store.writeBatch): the conversation's lock with the
// conditions of u, then the statements that more queues, whose results check reads (nil for
// none), then the record's. It returns the events' sequence numbers and the Seq of the
// conversation's last event before them.
func (s *Store) record(ctx context.Context, conversationID string, evs []event.Event, u conversation.StateUpdate,
	more func(*pgx.Batch), check func(pgx.BatchResults) error) (seqs []int64, prev int64, err error) {
	var read func(pgx.BatchResults) ([]int64, int64, error)
	err = s.writeBatch(ctx, func(b *pgx.Batch) error {
		queueLock(b, conversationID, u)
		if more != nil {
			more(b)
		}
		var err error
		read, err = queueRecord(b, conversationID, evs, u)
		return err
	}, func(br pgx.BatchResults) error {
		if err := readLock(br, u); err != nil {
			return err
		}
		if check != nil {
			if err := check(br); err != nil {
				return err
			}
		}
		var err error
		seqs, prev, err = read(br)
		return err
	})
	return seqs, prev, err
}

// queueRecord queues in b, after the statement that locks the conversation (queueLock), the
// statements of RecordEvents: the end of the log, the conversation's update, the start
// task's, the inserts of evs and the notification. Run after the lock was granted, at READ
// COMMITTED, each sees what committed before it started, so the end of the log is that of
// every append before. read reads their results: the events' sequence numbers and the Seq of
// the conversation's last event before them (0 for none). Seq is not set on evs, which only
// a commit may do, but their conversation ids are.
func queueRecord(b *pgx.Batch, conversationID string, evs []event.Event, u conversation.StateUpdate) (read func(pgx.BatchResults) (seqs []int64, prev int64, err error), err error) {
	for i := range evs {
		if err := adopt(&evs[i].ConversationID, conversationID, "event conversation"); err != nil {
			return nil, err
		}
	}
	b.Queue(`SELECT coalesce(max(seq), 0) FROM events WHERE conversation_id = $1`, conversationID)
	var w where
	var sets []string
	if u.ExecutionStatus != "" {
		sets = append(sets, "execution_status = "+w.arg(u.ExecutionStatus))
	}
	if len(u.Metrics) > 0 {
		sets = append(sets, "metrics = "+w.arg(string(u.Metrics)))
	}
	if u.ConfirmationPolicy != nil {
		p, err := json.Marshal(*u.ConfirmationPolicy)
		if err != nil {
			return nil, err
		}
		sets = append(sets, "confirmation_policy = "+w.arg(string(p)))
	}
	if u.WaitingForNode != nil {
		sets = append(sets, "waiting_for_node = "+w.arg(*u.WaitingForNode))
	}
	if u.SandboxID != "" {
		sets = append(sets, "sandbox_id = "+w.arg(u.SandboxID))
	}
	if !u.UpdatedAt.IsZero() {
		sets = append(sets, "updated_at = "+w.arg(u.UpdatedAt))
	}
	if len(sets) > 0 {
		w.add("id = " + w.arg(conversationID))
		b.Queue(`UPDATE conversations SET `+strings.Join(sets, ", ")+w.String(), w.args...)
	}
	if u.Task != nil {
		b.Queue(taskUpdate+` AND conversation_id = $8`, append(taskUpdateArgs(*u.Task), conversationID)...)
	}
	if err := queueEvents(b, evs); err != nil {
		return nil, err
	}
	if len(evs) > 0 {
		queueNotify(b, conversationID)
	}
	return func(br pgx.BatchResults) (seqs []int64, prev int64, err error) {
		if err := br.QueryRow().Scan(&prev); err != nil {
			return nil, 0, err
		}
		if len(sets) > 0 {
			if _, err := br.Exec(); err != nil {
				return nil, 0, err
			}
		}
		if u.Task != nil {
			tag, err := br.Exec()
			if err != nil {
				return nil, 0, err
			}
			if err := mustAffect(tag, conversation.ErrNotFound); err != nil {
				return nil, 0, fmt.Errorf("start task %s: %w", u.Task.ID, err)
			}
		}
		if seqs, err = readEvents(br, evs); err != nil {
			return nil, 0, err
		}
		if len(evs) > 0 {
			if err := readNotify(br, 1); err != nil {
				return nil, 0, err
			}
		}
		return seqs, prev, nil
	}, nil
}

func (s *Store) ConversationsByExecutionStatus(ctx context.Context, status string) ([]conversation.Conversation, error) {
	vs, err := collect(ctx, s.pool, scanView, viewSelect+` WHERE c.execution_status = $1 ORDER BY c.created_at, c.id`, status)
	if err != nil {
		return nil, fmt.Errorf("conversations with execution status %s: %w", status, err)
	}
	return conversations(vs), nil
}

// conversations are the conversations of vs.
func conversations(vs []conversation.View) []conversation.Conversation {
	out := make([]conversation.Conversation, len(vs))
	for i, v := range vs {
		out[i] = v.Conversation
	}
	return out
}
