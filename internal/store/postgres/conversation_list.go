package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// conversationWhere turns a filter into conditions on conversations c.
func conversationWhere(ownerID string, f conversation.Filter) where {
	var w where
	w.add("c.owner_id = " + w.arg(ownerID))
	if f.TitleContains != "" {
		// strpos matches a plain substring, so '%' and '_' in the search text are literal.
		w.add("strpos(c.title_fold, " + w.arg(fold(f.TitleContains)) + ") > 0")
	}
	if f.CreatedGTE != nil {
		w.add("c.created_at >= " + w.arg(timeArg(*f.CreatedGTE)))
	}
	if f.CreatedLT != nil {
		w.add("c.created_at < " + w.arg(timeArg(*f.CreatedLT)))
	}
	if f.UpdatedGTE != nil {
		w.add("c.updated_at >= " + w.arg(timeArg(*f.UpdatedGTE)))
	}
	if f.UpdatedLT != nil {
		w.add("c.updated_at < " + w.arg(timeArg(*f.UpdatedLT)))
	}
	if !f.IncludeSub {
		w.add("c.parent_id IS NULL")
	}
	if f.SelectedRepository != "" {
		w.add("c.selected_repository = " + w.arg(f.SelectedRepository))
	}
	if f.Trigger != "" {
		w.add("c.trigger_name = " + w.arg(f.Trigger))
	}
	if f.SandboxID != "" {
		w.add("c.sandbox_id = " + w.arg(f.SandboxID))
	}
	return w
}

func (s *Store) ListConversations(ctx context.Context, ownerID string, f conversation.Filter, q paging.Query) ([]conversation.View, string, error) {
	ls, next, err := s.ListConversationVersions(ctx, ownerID, f, q)
	if err != nil {
		return nil, "", err
	}
	vs, err := at(ctx, s, listedConversations, listingcache.Versions(ls))
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	return vs, next, nil
}

// ListConversationVersions reads the page's conversations and their versions from the owner's
// index alone when nothing but time and parent filters.
func (s *Store) ListConversationVersions(ctx context.Context, ownerID string, f conversation.Filter, q paging.Query) ([]paging.Listed, string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	w := conversationWhere(ownerID, f)
	keyset(&w, "c.created_at", "c.id", true, c)
	ls, next, err := readListed(ctx, s, `SELECT c.id, c.created_at, c.rev FROM conversations c`+w.String()+order("c.created_at", "c.id", true), &w, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	return ls, next, nil
}

func (s *Store) ConversationsAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]conversation.View, error) {
	return ownedAt(ctx, s, listedConversations, ownerID, ls, "conversations")
}

func (s *Store) CountConversations(ctx context.Context, ownerID string, f conversation.Filter) (int, error) {
	w := conversationWhere(ownerID, f)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM conversations c`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count conversations: %w", err)
	}
	return n, nil
}

func (s *Store) SubConversationIDs(ctx context.Context, ownerID string, parentIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(parentIDs) == 0 {
		return out, nil
	}
	type child struct {
		id, parent string
		created    time.Time
	}
	children, err := collect(ctx, s.pool, func(row pgx.Row) (child, error) {
		var c child
		err := row.Scan(&c.id, &c.parent, &c.created)
		return c, err
	}, `SELECT id, parent_id, created_at FROM conversations WHERE parent_id = ANY($1) AND owner_id = $2`, parentIDs, ownerID)
	if err != nil {
		return nil, fmt.Errorf("sub-conversations: %w", err)
	}
	// Sorted here, as the SQLite store does, so that the order is byte order whatever the
	// database's collation of the parameter.
	slices.SortFunc(children, func(a, b child) int {
		return cmp.Or(strings.Compare(a.parent, b.parent), a.created.Compare(b.created), strings.Compare(a.id, b.id))
	})
	for _, c := range children {
		out[c.parent] = append(out[c.parent], c.id)
	}
	return out, nil
}
