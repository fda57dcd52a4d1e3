package auth

import (
	"context"

	"github.com/agentd/agentd/internal/paging"
)

var pagingFirst = paging.Query{Limit: paging.MaxLimit}

type ctxKey struct{}

// WithUser returns a context that carries the authenticated user.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// FromContext returns the authenticated user of a request.
func FromContext(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok
}
