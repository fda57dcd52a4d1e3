package llm

import "context"

// Client completes a conversation with a model.
//
// Complete is safe for concurrent use by several goroutines. It blocks until the model
// answers, ctx is done, or the call fails; cancelling ctx aborts the HTTP request at once and
// Complete then returns an error that wraps ctx.Err() and holds no *Error, so nothing retries
// it. Every other failure holds an *Error (find it with errors.As; a client made by WithRetry
// wraps it in a *RetryError once it has retried). A request the adapter cannot express is a
// KindBadRequest error, and nothing is sent. Complete does not modify req.
//
// A Client holds no per-conversation state: the caller sends the whole history each time
// and accounts usage with a Metrics.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
