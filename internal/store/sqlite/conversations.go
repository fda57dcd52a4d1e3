package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// ownerID scopes every conversation and start task call exactly: unlike sandboxes, an empty
// ownerID matches no one.

// CreateConversation inserts c, task and first in one transaction. A zero task (empty ID) is not
// stored. Empty owner and conversation ids of task and events are taken from c; ids that differ
// from c's are an error. On success the elements of first get their Seq, as AppendEvents does.
// With claim, the conversation's lease is claim's (as ClaimConversation takes one).
func (s *Store) CreateConversation(ctx context.Context, c conversation.Conversation, task conversation.StartTask, first []event.Event, claim conversation.Claim) error {
	evs := make([]event.Event, len(first))
	copy(evs, first)
	var seqs []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := insertConversation(ctx, tx, c); err != nil {
			return err
		}
		if task.ID != "" {
			if err := adopt(&task.OwnerID, c.OwnerID, "start task owner"); err != nil {
				return err
			}
			if err := adopt(&task.ConversationID, c.ID, "start task conversation"); err != nil {
				return err
			}
			if err := insertStartTask(ctx, tx, task); err != nil {
				return err
			}
		}
		for i := range evs {
			if err := adopt(&evs[i].ConversationID, c.ID, "event conversation"); err != nil {
				return err
			}
		}
		var err error
		if seqs, err = s.insertEvents(ctx, tx, evs); err != nil || claim.Holder == "" {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_leases (conversation_id, holder, node, expires_at) VALUES (?, ?, ?, ?)`,
			c.ID, claim.Holder, claim.Node, nanos(time.Now().Add(claim.TTL))); err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		return nil
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

func insertConversation(ctx context.Context, tx *sql.Tx, c conversation.Conversation) error {
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
	_, err = tx.ExecContext(ctx,
		`INSERT INTO conversations (id, owner_id, sandbox_id, version, title, title_fold, selected_repository,
			selected_branch, git_provider, trigger_name, pr_numbers, llm_model, metrics, parent_id, request_sealed,
			created_at, updated_at, execution_status, secret_names, secrets_sealed, public, tags, title_by_user, confirmation_policy,
			work_dir, waiting_for_node)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.OwnerID, c.SandboxID, c.Version, c.Title, fold(c.Title), c.SelectedRepository,
		c.SelectedBranch, c.GitProvider, c.Trigger, prs, c.LLMModel, rawArg(c.Metrics), c.ParentID,
		blobArg(c.RequestSealed), nanos(c.CreatedAt), nanos(c.UpdatedAt), c.ExecutionStatus,
		secretNames, blobArg(c.SecretsSealed), c.Public, tags, c.TitleByUser, policy, c.WorkDir, c.WaitingForNode)
	if isUnique(err) {
		return conversation.ErrExists
	}
	return err
}

// fold is the case folding of TitleContains, applied to titles when stored and to the search
// text when searching. SQLite's own lower() and LIKE fold ASCII only.
func fold(s string) string { return strings.ToLower(s) }

// viewSelect reads a conversation with the status of its sandbox (if the owner still has it)
// and of its most recent start task. listSelect is the same without the sealed request, which
// listings never use and which may be large (a replay); its sealed secrets are small, and a
// sandbox's listing of secrets reads them. Both read the conversation's rev (View.Rev), which
// migration 0013 keeps in step with every column the view reads.
const (
	viewSelect = `SELECT c.id, c.owner_id, c.sandbox_id, c.version, c.title, c.selected_repository,
	c.selected_branch, c.git_provider, c.trigger_name, c.pr_numbers, c.llm_model, c.metrics, c.parent_id,
	c.request_sealed, ` + viewRest + viewFrom
	listSelect = `SELECT c.id, c.owner_id, c.sandbox_id, c.version, c.title, c.selected_repository,
	c.selected_branch, c.git_provider, c.trigger_name, c.pr_numbers, c.llm_model, c.metrics, c.parent_id,
	NULL, ` + viewRest + viewFrom
)

const (
	viewRest = `c.secret_names, c.secrets_sealed, c.public, c.tags, c.title_by_user, c.created_at, c.updated_at, c.execution_status, c.confirmation_policy, c.work_dir, c.waiting_for_node, s.status, s.session_key_sealed, t.status, t.detail, c.rev`
	viewFrom = `
FROM conversations c
LEFT JOIN sandboxes s ON c.sandbox_id <> '' AND s.id = c.sandbox_id AND s.owner_id = c.owner_id
LEFT JOIN start_tasks t ON t.id = (
	SELECT id FROM start_tasks
	WHERE conversation_id = c.id AND owner_id = c.owner_id
	ORDER BY created_at DESC, id DESC LIMIT 1)`
)

// scanView scans the columns of viewSelect or listSelect.
func scanView(sc scanner) (conversation.View, error) {
	var v conversation.View
	c := &v.Conversation
	var prs, secretNames, tags, policy string
	var metrics, sbStatus, taskStatus, taskDetail sql.NullString
	var created, updated int64
	err := sc.Scan(&c.ID, &c.OwnerID, &c.SandboxID, &c.Version, &c.Title, &c.SelectedRepository,
		&c.SelectedBranch, &c.GitProvider, &c.Trigger, &prs, &c.LLMModel, &metrics, &c.ParentID,
		&c.RequestSealed, &secretNames, &c.SecretsSealed, &c.Public, &tags, &c.TitleByUser, &created, &updated, &c.ExecutionStatus, &policy,
		&c.WorkDir, &c.WaitingForNode, &sbStatus, &v.SandboxKeySealed, &taskStatus, &taskDetail, &v.Rev)
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
	c.CreatedAt = fromNanos(created)
	c.UpdatedAt = fromNanos(updated)
	v.SandboxStatus = sandbox.StatusMissing
	if sbStatus.Valid {
		v.SandboxStatus = sandbox.Status(sbStatus.String)
	}
	v.TaskStatus = conversation.TaskStatus(taskStatus.String)
	v.TaskDetail = taskDetail.String
	return v, nil
}

func (s *Store) GetConversation(ctx context.Context, ownerID, id string) (conversation.View, error) {
	v, err := scanView(s.r.QueryRowContext(ctx, viewSelect+` WHERE c.id = ? AND c.owner_id = ?`, id, ownerID))
	if errors.Is(err, sql.ErrNoRows) {
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
		var res sql.Result
		res, err = s.one.ExecContext(ctx,
			`UPDATE conversations SET sandbox_id = ?, title = ?, title_fold = ?, metrics = ?, llm_model = ?, updated_at = ?
			WHERE id = ? AND owner_id = ?`,
			c.SandboxID, c.Title, fold(c.Title), rawArg(c.Metrics), c.LLMModel, nanos(c.UpdatedAt), c.ID, c.OwnerID)
		if err == nil {
			err = mustAffect(res, conversation.ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("update conversation %s: %w", c.ID, err)
	}
	return nil
}

func (s *Store) AddPRNumber(ctx context.Context, ownerID, id string, number int, at time.Time) error {
	err := checkTimes(at)
	if err == nil {
		err = s.write(ctx, func(tx *sql.Tx) error {
			var raw string
			err := tx.QueryRowContext(ctx, `SELECT pr_numbers FROM conversations WHERE id = ? AND owner_id = ?`, id, ownerID).Scan(&raw)
			if errors.Is(err, sql.ErrNoRows) {
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
			_, err = tx.ExecContext(ctx, `UPDATE conversations SET pr_numbers = ?, updated_at = ? WHERE id = ?`, b, nanos(at), id)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("add pr number to conversation %s: %w", id, err)
	}
	return nil
}

func (s *Store) DeleteConversation(ctx context.Context, ownerID, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		err := tx.QueryRowContext(ctx,
			`SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ? AND owner_id = ?)`, id, ownerID).Scan(&exists)
		if err != nil {
			return err
		}
		if !exists {
			return conversation.ErrNotFound
		}
		// Events first: they refer to the conversation.
		for _, q := range []string{
			`DELETE FROM conversation_commands WHERE conversation_id = ?`,
			`DELETE FROM conversation_leases WHERE conversation_id = ?`,
			`DELETE FROM events WHERE conversation_id = ?`,
			`DELETE FROM pending_messages WHERE conversation_id = ?`,
			`DELETE FROM start_tasks WHERE conversation_id = ?`,
			`DELETE FROM conversations WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	return nil
}

// RecordEvents appends and updates in one transaction, shared with the appends of other
// conversations that wait for the writer meanwhile (records.go); Seq is set on evs once it
// committed.
func (s *Store) RecordEvents(ctx context.Context, conversationID string, evs []event.Event, u conversation.StateUpdate) (int64, error) {
	if err := checkTimes(u.UpdatedAt); err != nil {
		return 0, fmt.Errorf("record events of conversation %s: %w", conversationID, err)
	}
	if u.Task != nil {
		if err := checkTimes(u.Task.UpdatedAt); err != nil {
			return 0, fmt.Errorf("record events of conversation %s: start task %s: %w", conversationID, u.Task.ID, err)
		}
	}
	r := &recordReq{ctx: ctx, conversationID: conversationID, evs: evs, u: u}
	s.record(r)
	if r.err != nil {
		return 0, fmt.Errorf("record events of conversation %s: %w", conversationID, r.err)
	}
	for i := range evs {
		evs[i].Seq = r.seqs[i]
	}
	return r.prev, nil
}

// recordEvents is RecordEvents inside a transaction; it returns the events' sequence numbers
// and the Seq of the conversation's last event before them (0 for none).
func (s *Store) recordEvents(ctx context.Context, tx *sql.Tx, conversationID string, evs []event.Event, u conversation.StateUpdate) (seqs []int64, prev int64, err error) {
	for i := range evs {
		if err := adopt(&evs[i].ConversationID, conversationID, "event conversation"); err != nil {
			return nil, 0, err
		}
	}
	if u.Holder != "" {
		if err := s.checkHolder(ctx, tx, conversationID, u.Holder); err != nil {
			return nil, 0, err
		}
	}
	if u.IfStatus != nil || u.IfSecretsRevision != nil {
		var status string
		var rev int64
		err := s.w.queryRowIn(ctx, tx, `SELECT c.execution_status,
			coalesce((SELECT rev FROM secret_revisions WHERE user_id = c.owner_id), 0)
			FROM conversations c WHERE c.id = ?`, conversationID).Scan(&status, &rev)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, 0, conversation.ErrNotFound
		case err != nil:
			return nil, 0, err
		case u.IfStatus != nil && status != *u.IfStatus:
			return nil, 0, conversation.ErrStatusChanged
		case u.IfSecretsRevision != nil && rev != *u.IfSecretsRevision:
			return nil, 0, conversation.ErrSecretsRevised
		}
	}
	// One seek at the end of the conversation's part of events_conversation_seq.
	if err := s.w.queryRowIn(ctx, tx, `SELECT coalesce(max(seq), 0) FROM events WHERE conversation_id = ?`, conversationID).Scan(&prev); err != nil {
		return nil, 0, err
	}
	var sets []string
	var args []any
	if u.ExecutionStatus != "" {
		sets, args = append(sets, "execution_status = ?"), append(args, u.ExecutionStatus)
	}
	if len(u.Metrics) > 0 {
		sets, args = append(sets, "metrics = ?"), append(args, string(u.Metrics))
	}
	if u.ConfirmationPolicy != nil {
		b, err := json.Marshal(*u.ConfirmationPolicy)
		if err != nil {
			return nil, 0, err
		}
		sets, args = append(sets, "confirmation_policy = ?"), append(args, string(b))
	}
	if u.WaitingForNode != nil {
		sets, args = append(sets, "waiting_for_node = ?"), append(args, *u.WaitingForNode)
	}
	if u.SandboxID != "" {
		sets, args = append(sets, "sandbox_id = ?"), append(args, u.SandboxID)
	}
	if !u.UpdatedAt.IsZero() {
		sets, args = append(sets, "updated_at = ?"), append(args, nanos(u.UpdatedAt))
	}
	if len(sets) > 0 {
		// rev set here spares the row the second write of its trigger (migration 0013).
		sets = append(sets, "rev = rev + 1")
		res, err := s.w.execIn(ctx, tx, `UPDATE conversations SET `+strings.Join(sets, ", ")+` WHERE id = ?`,
			append(args, conversationID)...)
		if err != nil {
			return nil, 0, err
		}
		if err := mustAffect(res, conversation.ErrNotFound); err != nil {
			return nil, 0, err
		}
	}
	if t := u.Task; t != nil {
		res, err := s.w.execIn(ctx, tx, `UPDATE start_tasks SET `+taskUpdate+` WHERE id = ? AND owner_id = ? AND conversation_id = ?`,
			append(taskUpdateArgs(*t), t.ID, t.OwnerID, conversationID)...)
		if err != nil {
			return nil, 0, err
		}
		if err := mustAffect(res, conversation.ErrNotFound); err != nil {
			return nil, 0, fmt.Errorf("start task %s: %w", t.ID, err)
		}
	}
	seqs, err = s.insertEvents(ctx, tx, evs)
	return seqs, prev, err
}

func (s *Store) ConversationsByExecutionStatus(ctx context.Context, status string) ([]conversation.Conversation, error) {
	vs, err := collect(ctx, s.r, scanView, viewSelect+` WHERE c.execution_status = ? ORDER BY c.created_at, c.id`, status)
	if err != nil {
		return nil, fmt.Errorf("conversations with execution status %s: %w", status, err)
	}
	out := make([]conversation.Conversation, len(vs))
	for i, v := range vs {
		out[i] = v.Conversation
	}
	return out, nil
}
