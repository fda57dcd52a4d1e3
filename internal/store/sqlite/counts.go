package sqlite

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/internal/store"
)

func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	out := store.Counts{Sandboxes: map[store.SandboxKey]int{}, Conversations: map[string]int{}}
	rows, err := s.r.QueryContext(ctx, `SELECT backend, node, status, COUNT(*) FROM sandboxes GROUP BY backend, node, status`)
	if err != nil {
		return store.Counts{}, fmt.Errorf("count sandboxes: %w", err)
	}
	for rows.Next() {
		var k store.SandboxKey
		var n int
		if err := rows.Scan(&k.Backend, &k.Node, (*string)(&k.Status), &n); err != nil {
			rows.Close()
			return store.Counts{}, fmt.Errorf("count sandboxes: %w", err)
		}
		out.Sandboxes[k] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Counts{}, fmt.Errorf("count sandboxes: %w", err)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT execution_status, COUNT(*) FROM conversations GROUP BY execution_status`)
	if err != nil {
		return store.Counts{}, fmt.Errorf("count conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return store.Counts{}, fmt.Errorf("count conversations: %w", err)
		}
		out.Conversations[st] = n
	}
	if err := rows.Err(); err != nil {
		return store.Counts{}, fmt.Errorf("count conversations: %w", err)
	}
	return out, nil
}
