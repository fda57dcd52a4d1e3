// Package gittest is a git hosting provider for tests and benchmarks: git's own
// `git http-backend` (smart HTTP, fetch and push) on a loopback port, behind a handler that
// demands a token as a provider does, serving bare repositories the caller creates; and
// Remotes that point a proxy at it.
package gittest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/cgi"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
)

// User is the user name the server expects with its token (Basic auth, as GitHub takes
// x-access-token:<token>).
const User = "x-access-token"

// Author is whom Remotes name as the author of commits made in clones.
var Author = struct{ Name, Email string }{"Octo Cat", "octocat@users.example.com"}

// Server is a git server on loopback. Safe for concurrent use.
type Server struct {
	token string
	root  string
	ln    net.Listener
	srv   *http.Server
	git   string

	mu       sync.Mutex
	requests []Request
	// autoCreate makes Remotes create a repository it is asked about.
	autoCreate bool
	// creating serialises the creations of Remote.
	creating sync.Mutex
	// hold, when set, stops the next pack sent after its bytes (see HoldPack).
	hold *packHold
}

// Request is one request the server saw.
type Request struct {
	Method, Path, Service string
	// Authorized is whether it carried the token.
	Authorized bool
}

// New starts a server for repositories under dir (created if missing) that demands token.
// Close stops it.
func New(dir, token string) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("gittest: git is not installed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{token: token, root: dir, ln: ln, git: git}
	s.srv = &http.Server{Handler: s}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Start is New for a test: it skips the test when git is missing (fails it under CI), and
// stops the server when the test ends.
func Start(t testing.TB, token string) *Server {
	t.Helper()
	s, err := New(t.TempDir(), token)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the server's base URL; repository owner/name is at URL/owner/name.git.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Dir is where the bare repository of name lives.
func (s *Server) Dir(name string) string {
	return filepath.Join(s.root, filepath.FromSlash(name)+".git")
}

// Requests returns the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pass, ok := r.BasicAuth()
	authorized := ok && pass == s.token
	service := r.URL.Query().Get("service")
	if service == "" {
		service = r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Service: service, Authorized: authorized})
	s.mu.Unlock()
	if !authorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
		http.Error(w, "Bad credentials", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost && service == "git-upload-pack" {
		s.mu.Lock()
		if s.hold != nil && s.hold.armed() {
			w = &holdWriter{ResponseWriter: w, hold: s.hold, ctx: r.Context()}
		}
		s.mu.Unlock()
	}
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + User, // lets http-backend accept pushes
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.root,
		},
		InheritEnv: []string{"PATH"},
	}
	h.ServeHTTP(w, r)
}

// Commit is one commit of a repository made by Create.
type Commit struct {
	// Branch is where it goes: main when empty. A new branch starts at main.
	Branch string
	// Files are written (path → content) before the commit; a path ending in .sh is made
	// executable.
	Files   map[string]string
	Message string
}

// Create makes the bare repository name (owner/name) from commits, in order. Its default
// branch is main.
func (s *Server) Create(name string, commits ...Commit) error {
	work, err := os.MkdirTemp("", "gittest-work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := s.run(work, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	for i, c := range commits {
		branch := c.Branch
		if branch == "" {
			branch = "main"
		}
		if i > 0 {
			from := []string{"checkout", "-q", branch}
			if s.run(work, "rev-parse", "-q", "--verify", "refs/heads/"+branch) != nil {
				from = []string{"checkout", "-q", "-b", branch, "main"}
			}
			if err := s.run(work, from...); err != nil {
				return err
			}
		} else if branch != "main" {
			return errors.New("gittest: the first commit goes to main")
		}
		for _, p := range slices.Sorted(maps.Keys(c.Files)) {
			path := filepath.Join(work, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if strings.HasSuffix(p, ".sh") {
				mode = 0o755
			}
			if err := os.WriteFile(path, []byte(c.Files[p]), mode); err != nil {
				return err
			}
		}
		msg := c.Message
		if msg == "" {
			msg = fmt.Sprintf("commit %d", i+1)
		}
		if err := s.run(work, "add", "-A"); err != nil {
			return err
		}
		if err := s.run(work, "commit", "-q", "--allow-empty", "-m", msg); err != nil {
			return err
		}
	}
	bare := s.Dir(name)
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		return err
	}
	if err := s.run("", "clone", "-q", "--bare", work, bare); err != nil {
		return err
	}
	return s.run(bare, "symbolic-ref", "HEAD", "refs/heads/main")
}

// Git runs git in the bare repository of name and returns its output.
func (s *Server) Git(name string, args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = s.Dir(name)
	cmd.Env = gitEnv(s.root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (s *Server) run(dir string, args ...string) error {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(s.root)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gittest: git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// gitEnv makes git ignore the machine's configuration and commit as a fixed author.
func gitEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Repo Maker", "GIT_AUTHOR_EMAIL=maker@example.com",
		"GIT_COMMITTER_NAME=Repo Maker", "GIT_COMMITTER_EMAIL=maker@example.com",
		"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
		"LC_ALL=C",
	}
}

// Authorization is the Authorization header value that the server accepts.
func (s *Server) Authorization() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(User+":"+s.token))
}

// AutoCreate makes Remotes create, with one commit, any repository it is asked about that
// does not exist, so that conversations may name repositories freely.
func (s *Server) AutoCreate() {
	s.mu.Lock()
	s.autoCreate = true
	s.mu.Unlock()
}

// NotFoundError: Remotes were asked about a repository the server does not have.
type NotFoundError struct{ Repository string }

func (e *NotFoundError) Error() string { return "repository " + e.Repository + " not found" }

// ClientMessage is the text shown to the user.
func (e *NotFoundError) ClientMessage() string {
	return "repository " + e.Repository + " was not found with your git provider tokens"
}

// Remote implements the proxy's Remotes for this server: every provider's repositories live
// here, the commit author is Author.
func (s *Server) Remote(_ context.Context, _, provider, repository string) (gitprovider.Remote, error) {
	s.creating.Lock()
	defer s.creating.Unlock()
	if _, err := os.Stat(s.Dir(repository)); err != nil {
		s.mu.Lock()
		auto := s.autoCreate
		s.mu.Unlock()
		if !auto {
			return gitprovider.Remote{}, &NotFoundError{Repository: repository}
		}
		if err := s.Create(repository, Commit{Files: map[string]string{"README.md": "# " + repository + "\n"}}); err != nil {
			return gitprovider.Remote{}, err
		}
	}
	if provider == "" {
		provider = gitprovider.GitHub
	}
	u, err := url.Parse(s.URL() + "/" + repository + ".git")
	if err != nil {
		return gitprovider.Remote{}, err
	}
	return gitprovider.Remote{
		Provider: provider, Repository: repository, URL: u, Authorization: s.Authorization(),
		AuthorName: Author.Name, AuthorEmail: Author.Email,
	}, nil
}

// HoldPack makes the next answer to a fetch that is larger than after bytes stop there, its
// start sent, until release is called: a test sees a clone in the middle of receiving its
// objects. held is closed once it has stopped.
func (s *Server) HoldPack(after int64) (held <-chan struct{}, release func()) {
	h := &packHold{after: after, held: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	var once sync.Once
	return h.held, func() { once.Do(func() { close(h.release) }) }
}

type packHold struct {
	after   int64
	held    chan struct{}
	release chan struct{}
	mu      sync.Mutex
	used    bool
}

func (h *packHold) armed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.used
}

// take reports whether this answer is the one to hold (the first past the bound).
func (h *packHold) take() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.used {
		return false
	}
	h.used = true
	return true
}

// holdWriter passes an answer on until it has written hold.after bytes, then waits.
type holdWriter struct {
	http.ResponseWriter
	hold    *packHold
	ctx     context.Context
	written int64
	done    bool
}

func (w *holdWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	if err == nil && !w.done && w.written >= w.hold.after && w.hold.take() {
		w.done = true
		http.NewResponseController(w.ResponseWriter).Flush()
		close(w.hold.held)
		select {
		case <-w.hold.release:
		case <-w.ctx.Done():
		}
	}
	return n, err
}

func (w *holdWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }
