package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// MaxResponseBytes bounds what is read of one response of a model server: 8 MiB is eight times
// the longest answer any model's output limit allows (128K tokens), and as much as a client may
// send in one request. A model server may be a user's own, whose answer the SDKs would
// otherwise read to its end, however long, into the server's memory, and whose answer becomes
// an event that every later model call and every page of events carries.
const MaxResponseBytes = 8 << 20

// ErrResponseTooLarge is the read error of a response body past MaxResponseBytes.
var ErrResponseTooLarge = fmt.Errorf("the model server's answer is over %d MiB, longer than any model's answer can be", MaxResponseBytes>>20)

// LimitResponse bounds the body of an SDK call's response to MaxResponseBytes (errors and
// successful answers alike): the adapters' middleware passes what the next handler returned
// through it.
func LimitResponse(resp *http.Response, err error) (*http.Response, error) {
	if err == nil && resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	}
	return resp, err
}

// limitedBody fails with ErrResponseTooLarge once more than its bound was read.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the bound tells a body of exactly the bound from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, ErrResponseTooLarge
	}
	return n, err
}

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
