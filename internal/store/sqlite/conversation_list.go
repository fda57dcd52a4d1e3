package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// conversationWhere turns a filter into conditions on conversations c.
func conversationWhere(ownerID string, f conversation.Filter) where {
	var w where
	w.add("c.owner_id = ?", ownerID)
	if f.TitleContains != "" {
		// instr matches a plain substring, so '%' and '_' in the search text are literal.
		w.add("instr(c.title_fold, ?) > 0", fold(f.TitleContains))
	}
	if f.CreatedGTE != nil {
		w.add("c.created_at >= ?", nanos(*f.CreatedGTE))
	}
	if f.CreatedLT != nil {
		w.add("c.created_at < ?", nanos(*f.CreatedLT))
	}
	if f.UpdatedGTE != nil {
		w.add("c.updated_at >= ?", nanos(*f.UpdatedGTE))
	}
	if f.UpdatedLT != nil {
		w.add("c.updated_at < ?", nanos(*f.UpdatedLT))
	}
	if !f.IncludeSub {
		w.add("c.parent_id IS NULL")
	}
	if f.SelectedRepository != "" {
		w.add("c.selected_repository = ?", f.SelectedRepository)
	}
	if f.Trigger != "" {
		w.add("c.trigger_name = ?", f.Trigger)
	}
	if f.SandboxID != "" {
		w.add("c.sandbox_id = ?", f.SandboxID)
	}
	return w
}

func (s *Store) ListConversations(ctx context.Context, ownerID string, f conversation.Filter, q paging.Query) ([]conversation.View, string, error) {
	versions, next, err := s.conversationVersions(ctx, ownerID, f, q)
	if err != nil {
		return nil, "", err
	}
	vs, err := at(ctx, s, listedConversations, versions)
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	return vs, next, nil
}

func (s *Store) ListConversationVersions(ctx context.Context, ownerID string, f conversation.Filter, q paging.Query) ([]paging.Listed, string, error) {
	versions, next, err := s.conversationVersions(ctx, ownerID, f, q)
	if err != nil {
		return nil, "", err
	}
	return listingcache.Listed(versions), next, nil
}

func (s *Store) ConversationsAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]conversation.View, error) {
	return ownedAt(ctx, s, listedConversations, ownerID, ls, "conversations")
}

// conversationVersions reads the versions of a page of the owner's conversations (from the
// owner's index alone when nothing but time and parent filters), and the next page's cursor.
func (s *Store) conversationVersions(ctx context.Context, ownerID string, f conversation.Filter, q paging.Query) ([]listingcache.Version[string], string, error) {
	q = q.Normalize()
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	w := conversationWhere(ownerID, f)
	keyset(&w, "c.created_at", "c.id", true, c)
	versions, next, err := listVersions(ctx, s, scanCreatedVersion,
		`SELECT c.id, c.created_at, c.rev FROM conversations c`+w.String()+order("c.created_at", "c.id", true), w.args, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list conversations: %w", err)
	}
	return versions, next, nil
}

func (s *Store) CountConversations(ctx context.Context, ownerID string, f conversation.Filter) (int, error) {
	w := conversationWhere(ownerID, f)
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversations c`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count conversations: %w", err)
	}
	return n, nil
}

func (s *Store) SubConversationIDs(ctx context.Context, ownerID string, parentIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(parentIDs) == 0 {
		return out, nil
	}
	list, err := listArg(parentIDs)
	if err != nil {
		return nil, fmt.Errorf("sub-conversations: %w", err)
	}
	// Through the index on parent_id (the unary + keeps the owner's index from being
	// chosen), each parent's children in order; sorted here, since IN lists several parents.
	rows, err := s.r.QueryContext(ctx, `SELECT id, parent_id, created_at FROM conversations
		WHERE parent_id`+inList+` AND +owner_id = ?`, list, ownerID)
	if err != nil {
		return nil, fmt.Errorf("sub-conversations: %w", err)
	}
	defer rows.Close()
	type child struct {
		id      string
		created int64
	}
	children := map[string][]child{}
	for rows.Next() {
		var c child
		var parent string
		if err := rows.Scan(&c.id, &parent, &c.created); err != nil {
			return nil, fmt.Errorf("sub-conversations: %w", err)
		}
		children[parent] = append(children[parent], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sub-conversations: %w", err)
	}
	for parent, cs := range children {
		slices.SortFunc(cs, func(a, b child) int { return cmp.Or(cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id)) })
		for _, c := range cs {
			out[parent] = append(out[parent], c.id)
		}
	}
	return out, nil
}
