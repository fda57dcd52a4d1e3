package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
)

// Deps are the services the pages read.
type Deps struct {
	Auth          *auth.Service
	Conversations *conversation.Service
	Sandboxes     *sandbox.Service
	Settings      *settings.Service
	GitProviders  *gitprovider.Service
	CustomSecrets *customsecret.Service
	Logger        *slog.Logger
	// PublicURL is the base URL browsers reach this server at. An https one makes the
	// session cookie Secure also when TLS ends at a proxy in front.
	PublicURL string
	Version   string
	// DefaultModel is the server's model (AGENTD_LLM_MODEL), shown where a user has none.
	DefaultModel string
	// Now is the clock of the pages' relative times; nil means time.Now.
	Now func() time.Time
}

// App serves the web app. Close ends its live streams.
type App struct {
	d      Deps
	log    *slog.Logger
	mux    *http.ServeMux
	pages  map[string]*template.Template
	frags  *template.Template
	assets *assets

	// streams are the open live streams, which Close ends.
	mu      sync.Mutex
	closed  bool
	streams map[*liveStream]struct{}
}

// New builds the app: its templates and assets, checked once here.
func New(d Deps) (*App, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	a := &App{d: d, log: d.Logger, streams: map[*liveStream]struct{}{}}
	var err error
	if a.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if a.pages, a.frags, err = a.parseTemplates(); err != nil {
		return nil, err
	}
	a.mux = http.NewServeMux()
	a.routes()
	return a, nil
}

// pageHandler renders a page or answers an error; it gets the signed-in user.
type pageHandler func(w http.ResponseWriter, r *http.Request, s *signedIn) error

// signedIn is the session of a request.
type signedIn struct {
	User  auth.User
	Token string
	CSRF  string
	// KeyID is the API key the session was opened with.
	KeyID string
}

func (a *App) routes() {
	m := a.mux
	m.HandleFunc("GET /{$}", a.home)
	m.HandleFunc("GET /assets/{name}", a.serveAsset)
	m.HandleFunc("GET /sign-in", a.signInPage)
	m.HandleFunc("POST /sign-in", a.signIn)
	m.HandleFunc("POST /sign-out", a.signOut)
	m.Handle("GET /conversations", a.page(a.conversationsPage))
	m.Handle("GET /conversations/new", a.page(a.newConversationPage))
	m.Handle("GET /conversations/rows", a.page(a.conversationRows))
	m.Handle("GET /conversations/{id}", a.page(a.conversationPage))
	m.Handle("GET /conversations/{id}/stream", a.page(a.conversationStream))
	m.Handle("GET /conversations/{id}/status", a.page(a.statusFragment))
	m.Handle("GET /conversations/{id}/changes", a.page(a.changesFragment))
	m.Handle("GET /conversations/{id}/diff", a.page(a.diffFragment))
	m.Handle("GET /conversations/{id}/files", a.page(a.filesFragment))
	m.Handle("GET /sandboxes", a.page(a.sandboxesPage))
	m.Handle("GET /settings", a.page(a.settingsPage))
	m.Handle("GET /settings/users", a.page(a.usersPage))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s, _ := a.session(r)
		a.errorPage(w, r, s, http.StatusNotFound, "There is no such page.")
	})
}

// ServeHTTP serves the app with its security headers.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.log.Error("panic in web handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			a.errorPage(w, r, nil, http.StatusInternalServerError, "Something went wrong on the server.")
		}
	}()
	a.mux.ServeHTTP(w, r)
}

// contentSecurityPolicy lets the page run only the app's own script, use only its own
// stylesheet (no inline script, no style attributes), show images from itself and data URLs
// (a message's pasted images), connect only to itself, and be framed by nobody. Trusted
// Types make the script's one way of inserting HTML (the server's fragments) the only one.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; manifest-src 'self'; " +
	"require-trusted-types-for 'script'; trusted-types agentd"

// page wraps a handler that needs a signed-in user: without one, a page leads to the sign-in
// form and comes back after it; a fragment or stream answers 401.
func (a *App) page(h pageHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := a.session(r)
		if err != nil {
			if !errors.Is(err, auth.ErrUnauthorized) {
				a.log.Error("web session", "err", err)
				a.errorPage(w, r, nil, http.StatusInternalServerError, "The server could not read your session.")
				return
			}
			if wantsFragment(r) {
				http.Error(w, "Sign in again.", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/sign-in?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if err := h(w, r, s); err != nil {
			a.fail(w, r, s, err)
		}
	})
}

// wantsFragment reports whether a request is the script's (a fragment or a stream), which
// wants no redirect to a page.
func wantsFragment(r *http.Request) bool {
	return r.Header.Get("X-Requested-With") == "agentd" || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// fail answers a handler's error: the domain's "not found" as 404, the rest as 500.
func (a *App) fail(w http.ResponseWriter, r *http.Request, s *signedIn, err error) {
	var we *webError
	switch {
	case errors.As(err, &we):
		a.errorPage(w, r, s, we.status, we.msg)
	case errors.Is(err, conversation.ErrNotFound), errors.Is(err, sandbox.ErrNotFound):
		a.errorPage(w, r, s, http.StatusNotFound, "There is no such page, or it is not yours.")
	case errors.Is(err, auth.ErrForbidden):
		a.errorPage(w, r, s, http.StatusForbidden, "Only admins may see this page.")
	case errors.Is(err, context.Canceled):
	default:
		a.log.Error("web page failed", "path", r.URL.Path, "err", err)
		a.errorPage(w, r, s, http.StatusInternalServerError, "Something went wrong on the server.")
	}
}

// webError is an answer with a status and a message for people.
type webError struct {
	status int
	msg    string
}

func (e *webError) Error() string { return e.msg }

// errorPage answers status with a page saying msg (a fragment: the message alone).
func (a *App) errorPage(w http.ResponseWriter, r *http.Request, s *signedIn, status int, msg string) {
	if wantsFragment(r) {
		http.Error(w, msg, status)
		return
	}
	a.render(w, r, status, "error", s, "Error", map[string]any{"Status": status, "Message": msg})
}

// home leads to the conversations, or to the sign-in form.
func (a *App) home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/conversations", http.StatusSeeOther)
}

// pageData is what every page template gets.
type pageData struct {
	Title   string
	Nav     string
	User    *auth.User
	CSRF    string
	Assets  *assets
	Version string
	Data    any
}

// render writes a page, compressed when the browser takes gzip.
func (a *App) render(w http.ResponseWriter, r *http.Request, status int, name string, s *signedIn, title string, data any) {
	t, ok := a.pages[name]
	if !ok {
		panic("web: no page template " + name)
	}
	pd := pageData{Title: title, Nav: name, Assets: a.assets, Version: a.d.Version, Data: data}
	if s != nil {
		pd.User, pd.CSRF = &s.User, s.CSRF
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", pd); err != nil {
		a.log.Error("render page", "page", name, "err", err)
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeCompressed(w, r, status, b.Bytes())
}

// fragment writes a fragment template's output.
func (a *App) fragment(w http.ResponseWriter, r *http.Request, name string, data any) error {
	var b bytes.Buffer
	if err := a.frags.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render fragment %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeCompressed(w, r, http.StatusOK, b.Bytes())
	return nil
}

// fragmentHTML renders a fragment template to a string.
func (a *App) fragmentHTML(name string, data any) (string, error) {
	var b strings.Builder
	if err := a.frags.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render fragment %s: %w", name, err)
	}
	return b.String(), nil
}

// minGzip is the smallest body worth compressing.
const minGzip = 1024

var gzipWriters = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression); return w }}

// writeCompressed writes body with status, gzipped when the client accepts it and the body
// is large enough to gain from it.
func writeCompressed(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h.Add("Vary", "Accept-Encoding")
	if len(body) < minGzip || !acceptsGzip(r) {
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(status)
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(w)
	_, _ = gz.Write(body)
	_ = gz.Close()
	gzipWriters.Put(gz)
}

func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// Close ends the live streams. Safe to call twice.
func (a *App) Close() {
	a.mu.Lock()
	a.closed = true
	streams := make([]*liveStream, 0, len(a.streams))
	for s := range a.streams {
		streams = append(streams, s)
	}
	a.mu.Unlock()
	for _, s := range streams {
		s.stop()
	}
}
