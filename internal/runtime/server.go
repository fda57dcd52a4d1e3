package runtime

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	SandboxID string
	// Workspace is the absolute path of the workspace directory; commands run there by default.
	Workspace string
	// SessionKey must accompany every request but the liveness probes. Required.
	SessionKey string
	// Logger receives request and command logs; nil discards them.
	Logger  *slog.Logger
	Version string
	// Env is the environment commands start from; nil means this process's environment.
	// KeyEnv is always removed from it.
	Env []string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// ToolOutputDir receives the full text of clipped terminal outputs, where the agent can
	// read it. Empty means .agentd/outputs in the workspace, which the runtime hides from git
	// with a .gitignore.
	ToolOutputDir string
	// TerminalNoChangeTimeout is how long a terminal command may print nothing before its
	// call returns, and TerminalMaxWait the longest a terminal call waits, for calls that do
	// not say (ToolRequest.Terminal); 0 means terminal.DefaultNoChangeTimeout and
	// terminal.DefaultMaxWait.
	TerminalNoChangeTimeout time.Duration
	TerminalMaxWait         time.Duration
	// MaxUploadBytes bounds one file uploaded into the workspace; 0 means
	// DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// Credential is the user every process the runtime starts runs as: the terminal's shell,
	// commands and git. Nil means the runtime's own (see becomeSandboxUser).
	Credential *syscall.Credential
}

// Server is the runtime's HTTP handler. It is safe for concurrent use; commands run in
// parallel, each in its own process group inside the runtime's session. Close ends the tool
// sessions (and the processes of their terminals); call it once the HTTP server has stopped.
type Server struct {
	cfg       ServerConfig
	log       *slog.Logger
	keySum    [sha256.Size]byte
	shell     string
	env       []string
	startedAt time.Time
	mux       *http.ServeMux
	tools     *toolSessions
	mcp       *mcpHubs
	relay     *gitRelay
	bash      *bashEvents
	inits     *workInits
}

// NewServer checks cfg and builds the handler.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.SessionKey == "" {
		return nil, errors.New("new runtime server: no session key")
	}
	if !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("new runtime server: workspace %q is not an absolute path", cfg.Workspace)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	if cfg.ToolOutputDir == "" {
		cfg.ToolOutputDir = filepath.Join(cfg.Workspace, defaultOutputDir)
	}
	if !filepath.IsAbs(cfg.ToolOutputDir) {
		return nil, fmt.Errorf("new runtime server: tool output directory %q is not an absolute path", cfg.ToolOutputDir)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		keySum:    sha256.Sum256([]byte(cfg.SessionKey)),
		shell:     findShell(),
		env:       withoutVar(env, runtimeclient.KeyEnv),
		startedAt: cfg.Now().UTC(),
		mux:       http.NewServeMux(),
		inits:     newWorkInits(),
	}
	s.tools = newToolSessions(s)
	s.mcp = newMCPHubs(s)
	s.relay = newGitRelay(cfg.Logger)
	s.bash = newBashEvents(s)
	s.routes()
	return s, nil
}

// arm gives a server built before its key was known (a pooled runtime's, see pooled.go) the
// session key and environment of the start that claimed its sandbox, as NewServer would have
// taken them, and starts its clock. It must be called before the server serves a request.
func (s *Server) arm(key string, env []string) {
	s.cfg.SessionKey, s.cfg.Env = key, env
	s.keySum = sha256.Sum256([]byte(key))
	s.env = withoutVar(env, runtimeclient.KeyEnv)
	s.startedAt = s.cfg.Now().UTC()
}

// routes is the route table. Paths are registered without methods so that a wrong method
// gets a JSON 405 from only rather than the mux's plain-text one.
func (s *Server) routes() {
	s.mux.Handle("/alive", only(http.MethodGet, s.handleAlive))
	s.mux.Handle("/health", only(http.MethodGet, s.handleHealth))
	s.mux.Handle("/api/identity", only(http.MethodGet, s.handleIdentity))
	s.mux.Handle("/api/command", only(http.MethodPost, s.handleCommand))
	s.mux.Handle("/api/command/stream", only(http.MethodPost, s.handleCommandStream))
	s.mux.Handle("/api/git/channel", only(http.MethodGet, s.handleGitChannel))
	s.mux.Handle("/api/tools/{name}", only(http.MethodPost, s.handleTool))
	s.mux.Handle("/api/tools/sessions/{conversation_id}", only(http.MethodDelete, s.handleCloseToolSession))
	s.mux.Handle("/api/tools/sessions/{conversation_id}/interrupt", only(http.MethodPost, s.handleInterruptToolSession))
	s.mux.Handle("/api/mcp/{conversation_id}", methods(map[string]http.HandlerFunc{
		http.MethodPut: s.handleMCPConfigure,
		http.MethodGet: s.handleMCPState,
	}))
	s.mux.Handle("/api/mcp/{conversation_id}/call", only(http.MethodPost, s.handleMCPCall))
	s.mux.Handle("/api/skill-files", only(http.MethodPost, s.handleSkillFiles))
	s.mux.Handle("/api/work-dir", only(http.MethodPost, s.handleWorkDir))
	s.workspaceRoutes()
	s.bashRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeDetail(w, http.StatusNotFound, "Not Found")
	})
}

// Close ends every tool session, killing the processes their terminals run, kills the
// running bash commands, stops the MCP servers and the git relay. Tool calls and bash
// commands after Close are answered 503. It is safe to call more than once.
func (s *Server) Close() error {
	s.tools.closeAll()
	s.bash.close()
	s.mcp.closeAll()
	s.relay.close()
	s.inits.close()
	return nil
}

// ServeHTTP checks the session key, except on the liveness probes, then routes the request,
// once no repository is being made (POST /api/work-dir) unless it is one that never touches
// the workspace's repositories.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isProbe(r.URL.Path) && !s.authorized(r) {
		writeDetail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if !passesInits(r.URL.Path) && s.inits.wait(r.Context()) != nil {
		return // the client went away
	}
	s.mux.ServeHTTP(w, r)
}

func isProbe(path string) bool { return path == "/alive" || path == "/health" }

// passesInits: the paths that need not wait for a repository being made. The skill files are
// read while a conversation's directory is made (they are no git file), and the identity is
// the runtime's answer to a probe.
func passesInits(path string) bool {
	return isProbe(path) || path == "/api/identity" || path == "/api/skill-files"
}

func only(method string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		h(w, r)
	})
}

// methods routes by method, answering 405 for the others.
func methods(hs map[string]http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := hs[r.Method]
		if !ok && r.Method == http.MethodHead {
			h, ok = hs[http.MethodGet]
		}
		if !ok {
			allow := make([]string, 0, len(hs))
			for m := range hs {
				allow = append(allow, m)
			}
			slices.Sort(allow)
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		h(w, r)
	})
}

// findShell prefers bash, as the tools expect it, and falls back to the POSIX shell.
func findShell() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// withoutVar returns env without any entry for name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			continue
		}
		out = append(out, kv)
	}
	return out
}
