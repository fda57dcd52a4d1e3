package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/webhook"
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
	var rp *relayedProblem
	var ie *customsecret.InvalidError
	var whe *webhook.InvalidError
	switch {
	case errors.As(err, &we):
		return http.StatusUnprocessableEntity, map[string]any{"detail": we.Problems}, false
	case errors.As(err, &se):
		return se.status, detail(se.detail), false
	case errors.As(err, &rp):
		return rp.status, json.RawMessage(rp.body), false
	case errors.As(err, &fe):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: fieldLoc(fe.Field), Msg: "Value error, " + fe.Msg}}}, false
	case errors.As(err, &ie):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: []any{"body", ie.Field}, Msg: "Value error, " + ie.Msg}}}, false
	case errors.As(err, &whe):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: []any{"body", whe.Field}, Msg: "Value error, " + whe.Msg}}}, false
	case errors.Is(err, paging.ErrBadCursor):
		return http.StatusUnprocessableEntity, map[string]any{"detail": []wire.Problem{{
			Type: "value_error", Loc: []any{"query", "page_id"}, Msg: "Value error, invalid page_id: pass back a next_page_id this server returned"}}}, false
	case errors.Is(err, auth.ErrUnauthorized), errors.Is(err, sandbox.ErrSessionKey):
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
	case errors.Is(err, conversation.ErrNotWaiting):
		return http.StatusConflict, detail("No action is waiting for confirmation"), false
	case errors.Is(err, conversation.ErrNotReady):
		return http.StatusConflict, detail("The conversation is still starting (or failed to start): see its start task"), false
	case conversation.IsTransition(err):
		return http.StatusConflict, detail(capitalize(err.Error())), false
	case errors.Is(err, conversation.ErrTooManyPending):
		return http.StatusTooManyRequests, detail(fmt.Sprintf("Too many pending messages. Maximum %d messages per conversation.", conversation.MaxPendingMessages)), false
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
	case errors.Is(err, sandbox.ErrOtherNode):
		return http.StatusServiceUnavailable, detail(stateMessage(err)), false
	case errors.Is(err, sandbox.ErrFailed):
		// The backend failed or the machine was too busy: the server says why (its log has
		// the cause), and the client may try again.
		return http.StatusServiceUnavailable, detail(stateMessage(err)), false
	case errors.Is(err, conversation.ErrNotFound):
		return http.StatusNotFound, detail("Conversation not found"), false
	case errors.Is(err, sandbox.ErrNotFound):
		return http.StatusNotFound, detail("Sandbox not found"), false
	case errors.Is(err, event.ErrNotFound):
		return http.StatusNotFound, detail("Event not found"), false
	case errors.Is(err, settings.ErrNotFound):
		return http.StatusNotFound, detail("Settings not found"), false
	case errors.Is(err, skill.ErrNotFound):
		return http.StatusNotFound, detail("Skill not found"), false
	case errors.Is(err, skill.ErrExists):
		return http.StatusConflict, detail("A skill with that name exists: change it with PUT /api/v1/skills/{name}"), false
	case errors.Is(err, skill.ErrTooMany):
		return http.StatusConflict, detail(fmt.Sprintf("You keep %d skills, as many as allowed: delete one first", skill.MaxUserSkills)), false
	case errors.Is(err, customsecret.ErrExists):
		return http.StatusConflict, detail("A secret with that name already exists"), false
	case errors.Is(err, customsecret.ErrTooMany):
		return http.StatusConflict, detail(fmt.Sprintf("You keep %d secrets, as many as allowed: delete one first", customsecret.MaxPerUser)), false
	case errors.Is(err, customsecret.ErrNotFound):
		return http.StatusNotFound, detail("Secret not found"), false
	case errors.Is(err, webhook.ErrNotFound):
		return http.StatusNotFound, detail("Webhook or delivery not found"), false
	case errors.Is(err, webhook.ErrLimit):
		return http.StatusConflict, detail(fmt.Sprintf("You have %d webhooks, as many as allowed: delete one first", webhook.MaxPerUser)), false
	case errors.Is(err, auth.ErrTooManyKeys):
		return http.StatusConflict, detail(fmt.Sprintf("The user has %d API keys, as many as allowed: delete one first", auth.MaxKeysPerUser)), false
	case errors.Is(err, auth.ErrNotFound):
		return http.StatusNotFound, detail("Not found"), false
	}
	if status, ok := providerStatus(err); ok {
		return status, detail(clientMessage(err, "The git provider failed")), false
	}
	return http.StatusInternalServerError, detail("Internal Server Error"), true
}

// providerStatuses are the statuses of failed git provider calls, each with a message that
// names the provider and says what to do.
var providerStatuses = []struct {
	kind   error
	status int
}{
	// No token stored, or the provider refused it: as OpenHands, 401.
	{gitprovider.ErrNoToken, http.StatusUnauthorized},
	{gitprovider.ErrTokenRefused, http.StatusUnauthorized},
	// The repository, issue or pull request is not there for this token.
	{gitprovider.ErrNotFound, http.StatusNotFound},
	{gitprovider.ErrForbidden, http.StatusForbidden},
	// What the caller sent cannot work: a host, a repository name, an operation the
	// provider lacks, a request the provider refused on its merits.
	{gitprovider.ErrBadHost, http.StatusUnprocessableEntity},
	{gitprovider.ErrBadRepository, http.StatusUnprocessableEntity},
	{gitprovider.ErrUnsupported, http.StatusUnprocessableEntity},
	{gitprovider.ErrRejected, http.StatusUnprocessableEntity},
	// The provider failed or could not be reached: a bad gateway, not agentd's fault.
	{gitprovider.ErrUnavailable, http.StatusBadGateway},
}

func providerStatus(err error) (int, bool) {
	var ge *gitprovider.Error
	if !errors.As(err, &ge) {
		return 0, false
	}
	for _, ps := range providerStatuses {
		if errors.Is(ge.Kind, ps.kind) {
			return ps.status, true
		}
	}
	return 0, false
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

// fieldLoc is the location in the body of a conversation.FieldError's field, whose nested
// fields are joined by dots.
func fieldLoc(field string) []any {
	loc := []any{"body"}
	for _, f := range strings.Split(field, ".") {
		loc = append(loc, f)
	}
	return loc
}
