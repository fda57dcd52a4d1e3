package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
)

func (s *Store) PatchConversation(ctx context.Context, ownerID, id string, p conversation.Patch, at time.Time) error {
	err := checkTimes(at)
	if err == nil {
		sets := []string{"updated_at = ?"}
		args := []any{nanos(at)}
		if p.Title != nil {
			sets = append(sets, "title = ?", "title_fold = ?", "title_by_user = 1")
			args = append(args, *p.Title, fold(*p.Title))
		}
		if p.Public != nil {
			sets, args = append(sets, "public = ?"), append(args, *p.Public)
		}
		if p.SelectedRepository != nil {
			sets, args = append(sets, "selected_repository = ?"), append(args, *p.SelectedRepository)
		}
		if p.SelectedBranch != nil {
			sets, args = append(sets, "selected_branch = ?"), append(args, *p.SelectedBranch)
		}
		if p.GitProvider != nil {
			sets, args = append(sets, "git_provider = ?"), append(args, *p.GitProvider)
		}
		var res sql.Result
		res, err = s.one.ExecContext(ctx, `UPDATE conversations SET `+strings.Join(sets, ", ")+` WHERE id = ? AND owner_id = ?`,
			append(args, id, ownerID)...)
		if err == nil {
			err = mustAffect(res, conversation.ErrNotFound)
		}
	}
	if err != nil {
		return fmt.Errorf("patch conversation %s: %w", id, err)
	}
	return nil
}

func (s *Store) SetGeneratedTitle(ctx context.Context, ownerID, id, title string, at time.Time) (bool, error) {
	if err := checkTimes(at); err != nil {
		return false, fmt.Errorf("set title of conversation %s: %w", id, err)
	}
	var set bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var byUser bool
		err := tx.QueryRowContext(ctx, `SELECT title_by_user FROM conversations WHERE id = ? AND owner_id = ?`, id, ownerID).Scan(&byUser)
		if errors.Is(err, sql.ErrNoRows) {
			return conversation.ErrNotFound
		}
		if err != nil || byUser {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE conversations SET title = ?, title_fold = ?, updated_at = ? WHERE id = ?`,
			title, fold(title), nanos(at), id)
		set = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("set title of conversation %s: %w", id, err)
	}
	return set, nil
}

// SetConversationSecrets compares and sets in one transaction on the writer.
func (s *Store) SetConversationSecrets(ctx context.Context, ownerID, id string, from, to conversation.SecretSet, at time.Time) error {
	err := checkTimes(at)
	var names string
	if err == nil {
		names, err = jsonArg(orEmptyNames(to.Names))
	}
	if err == nil {
		err = s.write(ctx, func(tx *sql.Tx) error {
			var curNames string
			var curSealed []byte
			err := tx.QueryRowContext(ctx, `SELECT secret_names, secrets_sealed FROM conversations WHERE id = ? AND owner_id = ?`,
				id, ownerID).Scan(&curNames, &curSealed)
			if errors.Is(err, sql.ErrNoRows) {
				return conversation.ErrNotFound
			}
			if err != nil {
				return err
			}
			cur, err := fromJSONList[string](curNames)
			if err != nil {
				return err
			}
			if !slices.Equal(cur, from.Names) || !bytes.Equal(curSealed, from.Sealed) {
				return conversation.ErrSecretsChanged
			}
			_, err = tx.ExecContext(ctx, `UPDATE conversations SET secret_names = ?, secrets_sealed = ?, updated_at = ? WHERE id = ?`,
				names, blobArg(to.Sealed), nanos(at), id)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("set secrets of conversation %s: %w", id, err)
	}
	return nil
}

// orEmptyNames stores no names as an empty list, as a new conversation stores them.
func orEmptyNames(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}
