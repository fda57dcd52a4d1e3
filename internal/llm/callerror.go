package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// CallError maps an adapter's failed SDK call to an *Error, or to a wrapped ctx error when
// the caller gave up. resp is the call's last HTTP response, if the SDK got one: an error
// status is classified by StatusError, which also covers bodies the SDK could not decode
// (a proxy's HTML page). Without one, TransportError decides. apiKey is removed from the
// message.
func CallError(ctx context.Context, err error, resp *http.Response, apiKey string) error {
	if resp != nil && resp.StatusCode >= 400 && ctx.Err() == nil {
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		}
		e := StatusError(resp.StatusCode, ParseRetryAfter(resp.Header, time.Now()), body)
		return e.Redact(apiKey)
	}
	mapped := TransportError(ctx, err)
	var e *Error
	if errors.As(mapped, &e) {
		e.Redact(apiKey)
	}
	return mapped
}
