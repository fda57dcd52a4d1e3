package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

// Signing in turns an API key into a session: the browser gets the session's token in an
// HttpOnly, SameSite=Lax cookie (Secure over TLS, or when the public URL is https), the store
// keeps its hash. Every form that changes something carries the session's CSRF token and must
// come from a page of this origin; the script sends the token as a header with its API calls.

// session returns the request's session, or auth.ErrUnauthorized.
func (a *App) session(r *http.Request) (*signedIn, error) {
	c, err := r.Cookie(auth.SessionCookie)
	if err != nil || c.Value == "" {
		return nil, auth.ErrUnauthorized
	}
	u, sess, err := a.d.Auth.SessionUser(r.Context(), c.Value)
	if err != nil {
		return nil, err
	}
	return &signedIn{User: u, Token: c.Value, CSRF: auth.CSRFToken(c.Value), KeyID: sess.KeyID}, nil
}

// secure says whether cookies must be Secure for r.
func (a *App) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(a.d.PublicURL, "https://")
}

func (a *App) setSessionCookie(w http.ResponseWriter, r *http.Request, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode})
}

func (a *App) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode})
}

type signInData struct {
	Next  string
	Error string
}

func (a *App) signInPage(w http.ResponseWriter, r *http.Request) {
	if s, err := a.session(r); err == nil && s != nil {
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	a.render(w, r, http.StatusOK, "signin", nil, "Sign in", signInData{Next: localPath(r.URL.Query().Get("next"))})
}

// signIn checks the API key of the form and starts a session. The form must come from a
// page of this origin, so that no other site signs a browser in to an account of its choice.
func (a *App) signIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		a.errorPage(w, r, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	next := localPath(r.PostForm.Get("next"))
	if !auth.SameOrigin(r, a.d.PublicURL) {
		a.render(w, r, http.StatusForbidden, "signin", nil, "Sign in",
			signInData{Next: next, Error: "The form was not sent from this site's sign-in page. Open the sign-in page and try again."})
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("api_key"))
	if key == "" {
		a.render(w, r, http.StatusUnprocessableEntity, "signin", nil, "Sign in", signInData{Next: next, Error: "Enter your API key."})
		return
	}
	token, sess, _, err := a.d.Auth.StartSession(r.Context(), key)
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		a.render(w, r, http.StatusUnauthorized, "signin", nil, "Sign in",
			signInData{Next: next, Error: "That API key is not valid (wrong, deleted or expired)."})
		return
	case err != nil:
		a.log.Error("sign in", "err", err)
		a.errorPage(w, r, nil, http.StatusInternalServerError, "The server could not sign you in.")
		return
	}
	a.setSessionCookie(w, r, token, sess.ExpiresAt)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session. It needs the session's CSRF token, so that no other site signs
// a browser out.
func (a *App) signOut(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		a.errorPage(w, r, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := r.Cookie(auth.SessionCookie)
	if err != nil || c.Value == "" {
		http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
		return
	}
	if !auth.SameOrigin(r, a.d.PublicURL) || !auth.CheckCSRF(c.Value, r.PostForm.Get(auth.CSRFField)) {
		a.errorPage(w, r, nil, http.StatusForbidden, "The sign-out form was not sent from this site. Reload the page and try again.")
		return
	}
	if err := a.d.Auth.EndSession(r.Context(), c.Value); err != nil {
		a.log.Error("sign out", "err", err)
		a.errorPage(w, r, nil, http.StatusInternalServerError, "The server could not sign you out.")
		return
	}
	a.clearSessionCookie(w, r)
	http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
}

// localPath is next when it is a path of this site, else the conversations: a sign-in never
// leads to another site.
func localPath(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\r\n\t") {
		return "/conversations"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/conversations"
	}
	return next
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
