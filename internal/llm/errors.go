package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/netpolicy"
)

// ErrorKind sorts provider failures by what the caller should do about them.
type ErrorKind string

// Error kinds.
const (
	KindAuth            ErrorKind = "auth"             // 401, 403: the key is wrong or lacks access
	KindRateLimit       ErrorKind = "rate_limit"       // 429: slow down, see RetryAfter
	KindServer          ErrorKind = "server"           // 5xx, 529, or an empty reply
	KindTimeout         ErrorKind = "timeout"          // the attempt ran past Config.Timeout, or 408
	KindConnection      ErrorKind = "connection"       // no HTTP response: refused, reset, DNS
	KindBadRequest      ErrorKind = "bad_request"      // other 4xx: the request itself is wrong
	KindContextWindow   ErrorKind = "context_window"   // the prompt does not fit the model
	KindInternalAddress ErrorKind = "internal_address" // the URL policy refused the base URL's address (netpolicy)
	KindOther           ErrorKind = "other"            // anything else, e.g. an exhausted quota
)

// Error is a failed model call. Its text is safe to show to users: it never contains the API
// key (adapters redact it) and holds only the provider's own message.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, or 0 when there was no response.
	Status int
	// RetryAfter is how long the provider asked us to wait (Retry-After), or 0.
	RetryAfter time.Duration
	// Msg says what went wrong, in the provider's words where it gave any.
	Msg string
	// Err is the underlying error, for errors.Is; its text is not part of Error().
	Err error
}

func (e *Error) Error() string {
	s := "llm: " + strings.ReplaceAll(string(e.Kind), "_", " ") + " error"
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same request may succeed if sent again: rate limits, server
// errors, timeouts and connection failures.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimit, KindServer, KindTimeout, KindConnection:
		return true
	}
	return false
}

// Redact removes secret from the message, for adapters to call with the API key.
func (e *Error) Redact(secret string) *Error {
	if secret != "" {
		e.Msg = strings.ReplaceAll(e.Msg, secret, "[redacted]")
	}
	return e
}

// maxMsg caps the provider's message so that an HTML error page does not flood the log.
const maxMsg = 500

// StatusError classifies an HTTP error response from any provider. body is the response
// body; its message is taken from the usual JSON error shapes (OpenAI's and Anthropic's
// {"error":{"message"}}, {"error":"..."}, vLLM's {"message"}, FastAPI's {"detail"}), or is
// the body's text.
func StatusError(status int, retryAfter time.Duration, body []byte) *Error {
	msg, code := errorMessage(body)
	e := &Error{Status: status, RetryAfter: retryAfter, Msg: msg}
	switch {
	case status == 401 || status == 403:
		e.Kind = KindAuth
	case status == 429 && strings.Contains(code, "insufficient_quota"):
		// OpenAI says 429 when the account is out of credit: waiting does not help.
		e.Kind = KindOther
	case status == 429:
		e.Kind = KindRateLimit
	case status == 408:
		e.Kind = KindTimeout
	case status < 500 && isContextWindow(msg+" "+code):
		e.Kind = KindContextWindow
	case status >= 500:
		e.Kind = KindServer
	case status >= 400:
		e.Kind = KindBadRequest
	default:
		e.Kind = KindOther
	}
	if e.Msg == "" {
		e.Msg = fmt.Sprintf("status %d", status)
	}
	return e
}

// contextWindowSigns are phrases, lower case, by which OpenAI, Anthropic, vLLM, llama.cpp,
// Ollama and LiteLLM say that a prompt does not fit the model's context window.
var contextWindowSigns = []string{
	"context_length_exceeded",
	"context_window_exceeded",
	"exceed_context_size",
	"maximum context length",
	"context length",
	"context window",
	"exceeds the available context size",
	"exceed context limit",
	"prompt is too long",
	"input is too long",
	"too many input tokens",
}

func isContextWindow(s string) bool {
	s = strings.ToLower(s)
	for _, sign := range contextWindowSigns {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// TransportError classifies a failure that came without an HTTP error response. When ctx is
// done the caller gave up, and the result wraps ctx.Err() instead of being an *Error, so that
// nothing retries it. A timeout of the attempt alone is KindTimeout; a network failure, or a
// reply cut short (unexpected EOF), is KindConnection; anything else (say, a reply that is
// not JSON) is KindOther.
func TransportError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("llm: %w", ctxErr)
	}
	var netErr net.Error
	var refused *netpolicy.RefusedError
	switch {
	case errors.As(err, &refused):
		subject := "the base URL"
		if refused.Host != "" {
			subject += " (" + refused.Host + ")"
		}
		return &Error{Kind: KindInternalAddress, Msg: refused.Explain(subject), Err: err}
	case errors.Is(err, ErrResponseTooLarge):
		return &Error{Kind: KindOther, Msg: ErrResponseTooLarge.Error(), Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &Error{Kind: KindTimeout, Msg: "the request timed out", Err: err}
	case isConnectionError(err):
		return &Error{Kind: KindConnection, Msg: err.Error(), Err: err}
	default:
		return &Error{Kind: KindOther, Msg: err.Error(), Err: err}
	}
}

func isConnectionError(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.As(err, &opErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}
