package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/wire"
)

// Which keys a request carries and what each may be. The route table says which kinds of
// key a route takes (wire.Operation.Keys); the services that own the keys check them: users'
// API keys the auth service, sandboxes' session keys the sandbox service.
//
// Authorization: Bearer always carries a user key. A request with neither header may carry the
// web app's session cookie instead, which stands for its user's key (session.go). X-Session-API-Key carries a sandbox's
// session key on the routes that take one; alone, it may carry a user key too, as OpenHands'
// clients send either there. When both headers come (OpenHands' cloud workspace sends its
// user key and its sandbox's key together), each is checked for what it is.

const sessionKeyHeader = "X-Session-API-Key"

// bearerKey is the key of an Authorization: Bearer header.
func bearerKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// requestKey is the one key a request carries, for the places that take one key of either
// kind: X-Session-API-Key, else Authorization: Bearer.
func requestKey(r *http.Request) string {
	if k := r.Header.Get(sessionKeyHeader); k != "" {
		return k
	}
	return bearerKey(r)
}

// userKey is where a request carries a user's key: the bearer token, else X-Session-API-Key.
func userKey(r *http.Request) string {
	if k := bearerKey(r); k != "" {
		return k
	}
	return r.Header.Get(sessionKeyHeader)
}

// authenticate checks the request's keys against the kinds op takes. A session key acts
// for its sandbox's owner; a user key reaches, on a sandbox's routes, only that user's
// sandbox.
func (a *API) authenticate(r *http.Request, op wire.Operation) (auth.User, error) {
	ctx := r.Context()
	bearer, header := bearerKey(r), r.Header.Get(sessionKeyHeader)
	sandboxID := r.PathValue("sandbox_id")
	if op.Takes(wire.SessionKey) && header != "" {
		sb, err := a.d.Sandboxes.AuthenticateSessionKey(ctx, sandboxID, header)
		switch {
		case err == nil && bearer != "":
			// Both keys came: the bearer must be a user's key too.
			if _, err := a.d.Auth.Authenticate(ctx, bearer); err != nil {
				return auth.User{}, err
			}
			return auth.User{ID: sb.OwnerID}, nil
		case err == nil:
			return auth.User{ID: sb.OwnerID}, nil
		case !errors.Is(err, sandbox.ErrSessionKey):
			return auth.User{}, err
		case bearer != "" || !op.Takes(wire.UserKey):
			// Beside a bearer token the header can only be a session key, and a wrong one.
			return auth.User{}, auth.ErrUnauthorized
		}
	}
	if !op.Takes(wire.UserKey) {
		return auth.User{}, auth.ErrUnauthorized
	}
	var u auth.User
	var err error
	if token := sessionCookie(r); bearer == "" && header == "" && token != "" {
		// No key: the web app's session cookie stands for the user's key (session.go).
		u, err = a.authenticateSession(r, token)
	} else {
		u, err = a.d.Auth.Authenticate(ctx, userKey(r))
	}
	if err != nil {
		return auth.User{}, err
	}
	if sandboxID != "" && op.Takes(wire.SessionKey) {
		if err := a.ownsSandbox(ctx, u, sandboxID); err != nil {
			return auth.User{}, err
		}
	}
	return u, nil
}

// ownsSandbox refuses a user's key on a sandbox of someone else's (as an unknown sandbox).
func (a *API) ownsSandbox(ctx context.Context, u auth.User, sandboxID string) error {
	_, err := a.d.Sandboxes.Get(ctx, u.ID, sandboxID)
	return err
}

// authenticateSandboxKey checks one key given for a sandbox's conversation API (the event
// socket's): the sandbox's session key, or its owner's API key.
func (a *API) authenticateSandboxKey(ctx context.Context, sandboxID, key string) (auth.User, error) {
	if key == "" {
		return auth.User{}, auth.ErrUnauthorized
	}
	sb, err := a.d.Sandboxes.AuthenticateSessionKey(ctx, sandboxID, key)
	if err == nil {
		return auth.User{ID: sb.OwnerID}, nil
	}
	if !errors.Is(err, sandbox.ErrSessionKey) {
		return auth.User{}, err
	}
	u, err := a.d.Auth.Authenticate(ctx, key)
	if err != nil {
		return auth.User{}, err
	}
	if err := a.ownsSandbox(ctx, u, sandboxID); err != nil {
		return auth.User{}, err
	}
	return u, nil
}
