package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/store"
)

func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	out := store.Counts{Sandboxes: map[store.SandboxKey]int{}, Conversations: map[string]int{}}
	type sandboxCount struct {
		k store.SandboxKey
		n int
	}
	sbs, err := collect(ctx, s.pool, func(row pgx.Row) (sandboxCount, error) {
		var c sandboxCount
		err := row.Scan(&c.k.Backend, &c.k.Node, (*string)(&c.k.Status), &c.n)
		return c, err
	}, `SELECT backend, node, status, count(*) FROM sandboxes GROUP BY backend, node, status`)
	if err != nil {
		return store.Counts{}, fmt.Errorf("count sandboxes: %w", err)
	}
	for _, c := range sbs {
		out.Sandboxes[c.k] = c.n
	}
	type convCount struct {
		status string
		n      int
	}
	cs, err := collect(ctx, s.pool, func(row pgx.Row) (convCount, error) {
		var c convCount
		err := row.Scan(&c.status, &c.n)
		return c, err
	}, `SELECT execution_status, count(*) FROM conversations GROUP BY execution_status`)
	if err != nil {
		return store.Counts{}, fmt.Errorf("count conversations: %w", err)
	}
	for _, c := range cs {
		out.Conversations[c.status] = c.n
	}
	return out, nil
}
