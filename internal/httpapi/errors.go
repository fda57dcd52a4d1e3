package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/wire"
)

// statusError is an error with the status and client-facing detail chosen by a handler.
type statusError struct {
	status int
	detail string
}

func (e *statusError) Error() string { return e.detail }

func errStatus(status int, detail string) error { return &statusError{status: status, detail: detail} }

var errNotFoundRoute = errStatus(http.StatusNotFound, "Not Found")

// problem builds a one-problem validation error.
func problem(typ, msg string, loc ...any) error {
	return &wire.Error{Problems: []wire.Problem{{Type: typ, Loc: loc, Msg: msg}}}
}

// mapError picks the status and body of an error. It is the only place that knows how domain
// errors become HTTP; internal error text never reaches the body.
func mapError(err error) (status int, body any, internal bool) {
	var we *wire.Error
	var se *statusError
	var fe *conversation.FieldError
	switch {
	case errors.As(err, &we):
		return http.StatusUnprocessableEntity, map[string]any{"detail": we.Problems}, false
	case errors.As(err, &se):
		return se.status, detail(se.detail), false
	case errors.As(err, &fe):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: []any{"body", fe.Field}, Msg: "Value error, " + fe.Msg}}}, false
	case errors.Is(err, paging.ErrBadCursor):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: []any{"query", "page_id"}, Msg: "Value error, invalid page_id: pass back a next_page_id this server returned"}}}, false
	case errors.Is(err, auth.ErrUnauthorized):
		return http.StatusUnauthorized, detail("Unauthorized"), false
	case errors.Is(err, auth.ErrForbidden):
		return http.StatusForbidden, detail("Admin rights required"), false
	case errors.Is(err, auth.ErrConflict):
		return http.StatusConflict, detail("A user with that name already exists"), false
	case errors.Is(err, conversation.ErrNoRepositories):
		return http.StatusBadRequest, detail("Repositories are not configured on this server: a conversation cannot work on one"), false
	case errors.Is(err, conversation.ErrNoLLM):
		return http.StatusBadRequest, detail(clientMessage(err, "No usable LLM settings")), false
	case errors.Is(err, conversation.ErrAlreadyRunning):
		return http.StatusConflict, detail("The conversation's agent is already running"), false
	case errors.Is(err, conversation.ErrNotReady):
		return http.StatusConflict, detail("The conversation is still starting (or failed to start): see its start task"), false
	case conversation.IsTransition(err):
		return http.StatusConflict, detail(capitalize(err.Error())), false
	case errors.Is(err, conversation.ErrExists):
		return http.StatusConflict, detail("A conversation with that id already exists"), false
	case errors.Is(err, sandbox.ErrLimit):
		return http.StatusTooManyRequests, detail("Too many running sandboxes: pause or delete one before starting or resuming another"), false
	case errors.Is(err, sandbox.ErrState):
		return http.StatusConflict, detail(stateMessage(err)), false
	case errors.Is(err, sandbox.ErrSpecNotFound):
		return http.StatusNotFound, detail("Sandbox spec not found"), false
	case errors.Is(err, sandbox.ErrUnsupported):
		return http.StatusUnprocessableEntity, detail(stateMessage(err)), false
	case errors.Is(err, conversation.ErrNotFound):
		return http.StatusNotFound, detail("Conversation not found"), false
	case errors.Is(err, sandbox.ErrNotFound):
		return http.StatusNotFound, detail("Sandbox not found"), false
	case errors.Is(err, event.ErrNotFound):
		return http.StatusNotFound, detail("Event not found"), false
	case errors.Is(err, settings.ErrNotFound):
		return http.StatusNotFound, detail("Settings not found"), false
	case errors.Is(err, auth.ErrNotFound):
		return http.StatusNotFound, detail("Not found"), false
	}
	return http.StatusInternalServerError, detail("Internal Server Error"), true
}

// stateMessage returns the client-facing message of a sandbox error: the sandbox package
// words it for clients ("sandbox is STARTING; only a RUNNING sandbox can be paused").
func stateMessage(err error) string {
	var m interface{ ClientMessage() string }
	if errors.As(err, &m) {
		return m.ClientMessage()
	}
	return sandbox.ErrState.Error()
}

func detail(s string) map[string]string { return map[string]string{"detail": s} }

// clientMessage is the client-facing message of err, or fallback.
func clientMessage(err error, fallback string) string {
	var m interface{ ClientMessage() string }
	if errors.As(err, &m) {
		return m.ClientMessage()
	}
	return fallback
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
