package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/netpolicy"
)

func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		status    int
		body      string
		kind      ErrorKind
		msg       string
		retryable bool
	}{
		{401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, KindAuth, "Incorrect API key provided", false},
		{403, `{"type":"error","error":{"type":"permission_error","message":"no access"}}`, KindAuth, "no access", false},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, KindRateLimit, "slow down", true},
		{429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, KindOther, "You exceeded your current quota", false},
		{408, ``, KindTimeout, "status 408", true},
		{400, `{"error":{"message":"bad","type":"invalid_request_error","code":"context_length_exceeded"}}`, KindContextWindow, "bad", false},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, KindContextWindow, "prompt is too long: 210000 tokens > 200000 maximum", false},
		{400, `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.","type":"BadRequestError","code":400}`, KindContextWindow, "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.", false},
		{400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, KindContextWindow, "the request exceeds the available context size, try increasing it", false},
		{400, `{"error":"invalid tool schema"}`, KindBadRequest, "invalid tool schema", false},
		{404, `{"error":"model 'llama9' not found"}`, KindBadRequest, "model 'llama9' not found", false},
		{422, `{"detail":"field required"}`, KindBadRequest, "field required", false},
		{500, `{"error":{"message":"The server had an error","type":"server_error"}}`, KindServer, "The server had an error", true},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, KindServer, "Overloaded", true},
		{502, `<html>Bad Gateway</html>`, KindServer, "<html>Bad Gateway</html>", true},
		// A 5xx that mentions the context is still the server's fault.
		{500, `{"error":{"message":"context window bookkeeping failed"}}`, KindServer, "context window bookkeeping failed", true},
	} {
		e := StatusError(tc.status, 0, []byte(tc.body))
		if e.Kind != tc.kind || e.Msg != tc.msg || e.Status != tc.status || e.Retryable() != tc.retryable {
			t.Errorf("StatusError(%d, %s) = %q %q (retryable %v), want %q %q (%v)",
				tc.status, tc.body, e.Kind, e.Msg, e.Retryable(), tc.kind, tc.msg, tc.retryable)
		}
	}
}

func TestStatusErrorClipsLongBodies(t *testing.T) {
	e := StatusError(502, 0, []byte(strings.Repeat("é", 1000)))
	if len(e.Msg) > maxMsg+len("…") || !strings.HasSuffix(e.Msg, "…") {
		t.Errorf("message of %d bytes, want at most %d and an ellipsis", len(e.Msg), maxMsg)
	}
}

func TestErrorText(t *testing.T) {
	e := (&Error{Kind: KindRateLimit, Status: 429, Msg: "key sk-secret is throttled"}).Redact("sk-secret")
	if got, want := e.Error(), "llm: rate limit error (HTTP 429): key [redacted] is throttled"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = (&Error{Kind: KindConnection, Msg: "refused"}).Redact("")
	if got, want := e.Error(), "llm: connection error: refused"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTransportError(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		kind ErrorKind
	}{
		{"deadline of the attempt", fmt.Errorf("post: %w", context.DeadlineExceeded), KindTimeout},
		{"connection refused", refused, KindConnection},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), KindConnection},
		{"cut short", fmt.Errorf("error reading response body: %w", io.ErrUnexpectedEOF), KindConnection},
		{"bad JSON", errors.New("error parsing response json: invalid character"), KindOther},
		{"an internal address", &url.Error{Op: "Post", URL: "http://localhost:1/v1/chat/completions", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &netpolicy.RefusedError{Host: "localhost", Addr: netip.MustParseAddr("::1"), Class: netpolicy.Loopback}}}, KindInternalAddress},
	} {
		var e *Error
		if err := TransportError(context.Background(), tc.err); !errors.As(err, &e) || e.Kind != tc.kind {
			t.Errorf("%s: %v, want kind %q", tc.name, err, tc.kind)
		} else if !errors.Is(e, tc.err) {
			t.Errorf("%s: %v does not wrap the cause", tc.name, err)
		}
	}

	internal := TransportError(context.Background(), &netpolicy.RefusedError{Host: "localhost", Addr: netip.MustParseAddr("127.0.0.1"), Class: netpolicy.Loopback})
	if want := "llm: internal address error: the base URL (localhost) resolves to 127.0.0.1, a loopback address; internal addresses are refused unless the administrator allows them"; internal.Error() != want {
		t.Errorf("refused: %q, want %q", internal, want)
	}
	var ie *Error
	if errors.As(internal, &ie) && ie.Retryable() {
		t.Error("a refusal of the URL policy is retryable")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := TransportError(ctx, refused)
	var e *Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
		t.Errorf("after cancel: %v, want the context's error and no *Error", err)
	}

	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := TransportError(ctx, context.DeadlineExceeded); !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &e) {
		t.Errorf("past the caller's deadline: %v, want the context's error and no *Error", err)
	}
}

// TestLimitResponse: a body of exactly MaxResponseBytes reads to its end; one byte more is
// ErrResponseTooLarge, and so is every read after it.
func TestLimitResponse(t *testing.T) {
	body := func(n int64) io.ReadCloser { return io.NopCloser(io.LimitReader(zeros{}, n)) }
	resp, err := LimitResponse(&http.Response{Body: body(MaxResponseBytes)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != MaxResponseBytes {
		t.Fatalf("a body at the bound: %d bytes read, %v", n, err)
	}
	resp, _ = LimitResponse(&http.Response{Body: body(MaxResponseBytes + 1)}, nil)
	if n, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, ErrResponseTooLarge) || n > MaxResponseBytes+1 {
		t.Fatalf("a body past the bound: %d bytes read, %v", n, err)
	}
	if _, err := resp.Body.Read(make([]byte, 8)); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("a read after the bound: %v", err)
	}
	// A failed call passes through as it is.
	if resp, err := LimitResponse(nil, io.ErrUnexpectedEOF); resp != nil || err != io.ErrUnexpectedEOF {
		t.Fatalf("a failed call: %v %v", resp, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
