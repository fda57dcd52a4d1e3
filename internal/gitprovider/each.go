package gitprovider

import (
	"context"
	"errors"
	"sync"
)

// eachConcurrency bounds the calls one listing makes at once to a provider.
const eachConcurrency = 4

// eachLimited runs f on every item, a few at a time, and returns the results in the items'
// order. An item the token can no longer see (gone, or access withdrawn since it was listed)
// is left out; any other failure is the answer.
func eachLimited[T, R any](ctx context.Context, items []T, f func(context.Context, T) (R, error)) ([]R, error) {
	results := make([]R, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, eachConcurrency)
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = f(ctx, item)
		}()
	}
	wg.Wait()
	out := make([]R, 0, len(items))
	for i, err := range errs {
		switch {
		case err == nil:
			out = append(out, results[i])
		case errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden):
		default:
			return nil, err
		}
	}
	return out, nil
}
