package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
)

func (s *Store) PatchConversation(ctx context.Context, ownerID, id string, p conversation.Patch, at time.Time) error {
	err := checkTimes(at)
	if err == nil {
		var w where
		sets := []string{"updated_at = " + w.arg(at)}
		if p.Title != nil {
			sets = append(sets, "title = "+w.arg(*p.Title), "title_fold = "+w.arg(fold(*p.Title)), "title_by_user = true")
		}
		if p.Public != nil {
			sets = append(sets, "public = "+w.arg(*p.Public))
		}
		if p.SelectedRepository != nil {
			sets = append(sets, "selected_repository = "+w.arg(*p.SelectedRepository))
		}
		if p.SelectedBranch != nil {
			sets = append(sets, "selected_branch = "+w.arg(*p.SelectedBranch))
		}
		if p.GitProvider != nil {
			sets = append(sets, "git_provider = "+w.arg(*p.GitProvider))
		}
		w.add("id = " + w.arg(id))
		w.add("owner_id = " + w.arg(ownerID))
		err = s.execOne(ctx, conversation.ErrNotFound, `UPDATE conversations SET `+strings.Join(sets, ", ")+w.String(), w.args...)
	}
	if err != nil {
		return fmt.Errorf("patch conversation %s: %w", id, err)
	}
	return nil
}

// SetGeneratedTitle is one conditional UPDATE: at READ COMMITTED, one that waited for a
// concurrent patch checks title_by_user again on the row the patch left, so a generated title
// never replaces a title the user gave meanwhile. When it changes nothing, a second look
// tells a conversation the user named from one that is not there.
func (s *Store) SetGeneratedTitle(ctx context.Context, ownerID, id, title string, at time.Time) (bool, error) {
	if err := checkTimes(at); err != nil {
		return false, fmt.Errorf("set title of conversation %s: %w", id, err)
	}
	tag, err := s.exec(ctx, `UPDATE conversations SET title = $1, title_fold = $2, updated_at = $3
		WHERE id = $4 AND owner_id = $5 AND NOT title_by_user`, title, fold(title), at, id, ownerID)
	if err != nil {
		return false, fmt.Errorf("set title of conversation %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 AND owner_id = $2`, id, ownerID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		err = conversation.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("set title of conversation %s: %w", id, err)
	}
	return false, nil
}

// SetConversationSecrets compares and sets in one transaction that locks the row, so that a
// concurrent change waits for it and then compares against what it wrote.
func (s *Store) SetConversationSecrets(ctx context.Context, ownerID, id string, from, to conversation.SecretSet, at time.Time) error {
	err := checkTimes(at)
	var names string
	if err == nil {
		names, err = jsonArg(orEmptyNames(to.Names))
	}
	if err == nil {
		err = s.write(ctx, func(tx pgx.Tx) error {
			var curNames string
			var curSealed []byte
			err := tx.QueryRow(ctx, `SELECT secret_names, secrets_sealed FROM conversations WHERE id = $1 AND owner_id = $2 FOR UPDATE`,
				id, ownerID).Scan(&curNames, &curSealed)
			if errors.Is(err, pgx.ErrNoRows) {
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
			_, err = tx.Exec(ctx, `UPDATE conversations SET secret_names = $1, secrets_sealed = $2, updated_at = $3 WHERE id = $4`,
				names, blobArg(to.Sealed), at, id)
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
