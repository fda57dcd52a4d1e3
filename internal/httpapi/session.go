package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/auth"
)

// A browser signed in to the web app holds a session cookie, which authenticates the API too
// for pages of the same origin (so that a web app served from this origin needs no key). The
// cookie is SameSite=Lax and no answer allows credentials across origins, so a page of another
// site can neither send it with a script's request nor read an answer; what remains is a form
// or a request it makes blindly to change something (CSRF), which sessionRequest refuses.

// sessionCookie is the session token of the request's cookie, if any.
func sessionCookie(r *http.Request) string {
	c, err := r.Cookie(auth.SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// safeMethod reports whether a request's method changes nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// errCrossOrigin refuses a request with the session cookie that may come from another site.
var errCrossOrigin = errStatus(http.StatusForbidden,
	"A request authenticated by the session cookie that changes something must come from a page of this origin (Sec-Fetch-Site or Origin says it does not, or neither is there); send an API key instead")

var errBadCSRF = errStatus(http.StatusForbidden, "Wrong "+auth.CSRFHeader+" for this session")

// authenticateSession checks a request that carries no key but the session cookie. One that
// changes something must come from a page of this origin, as the browser says in
// Sec-Fetch-Site or, where it sends no fetch metadata, Origin (every browser sends one of them
// with such a request, so a request with neither is refused); and if it carries the session's
// CSRF token (the web app always sends it), the token must be right.
func (a *API) authenticateSession(r *http.Request, token string) (auth.User, error) {
	u, _, err := a.d.Auth.SessionUser(r.Context(), token)
	if err != nil {
		return auth.User{}, err
	}
	if safeMethod(r.Method) {
		return u, nil
	}
	if !a.sameOrigin(r) {
		return auth.User{}, errCrossOrigin
	}
	if given := r.Header.Get(auth.CSRFHeader); given != "" && !auth.CheckCSRF(token, given) {
		return auth.User{}, errBadCSRF
	}
	return u, nil
}

// sameOrigin reports whether the browser says the request comes from a page of this server:
// Sec-Fetch-Site same-origin, else an Origin whose host is the request's Host or that of the
// public URL.
func (a *API) sameOrigin(r *http.Request) bool {
	return auth.SameOrigin(r, a.d.PublicURL)
}
