package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool"
	"github.com/agentd/agentd/internal/tool/fileeditor"
	"github.com/agentd/agentd/internal/tool/search"
	"github.com/agentd/agentd/internal/tool/terminal"
	"github.com/agentd/agentd/internal/wire"
)

// defaultOutputDir is where clipped terminal outputs go, relative to the workspace. Its parent
// gets a .gitignore so that the files never show up as changes of the repository.
const defaultOutputDir = ".agentd/outputs"

// errToolsClosed is reported for tool calls after Server.Close.
var errToolsClosed = errors.New("runtime tools closed")

// toolSessions holds one session per conversation.
type toolSessions struct {
	s        *Server
	search   *search.Searcher
	mu       sync.Mutex
	byConv   map[string]*toolSession
	closed   bool
	prepared sync.Once
}

// toolSession is one conversation's tool state. lock serialises the conversation's calls; a
// channel rather than a mutex, so that a caller that goes away stops waiting.
type toolSession struct {
	lock   chan struct{}
	editor *fileeditor.Editor
	// dir is the conversation's working directory: where its terminal starts, and what the
	// searches look in unless told otherwise.
	dir string

	// mu guards the terminal, which close takes while a call may hold lock for long.
	mu     sync.Mutex
	term   *terminal.Session // started on the first terminal call
	closed bool
}

func newToolSessions(s *Server) *toolSessions {
	return &toolSessions{
		s:      s,
		search: search.New(search.Options{Root: s.cfg.Workspace}),
		byConv: map[string]*toolSession{},
	}
}

// get returns the conversation's session, creating it in dir ("": the workspace).
func (ts *toolSessions) get(conv, dir string) (*toolSession, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, errToolsClosed
	}
	sess := ts.byConv[conv]
	if sess == nil {
		if dir == "" {
			dir = ts.s.cfg.Workspace
		}
		sess = &toolSession{
			lock:   make(chan struct{}, 1),
			editor: fileeditor.New(fileeditor.Options{Dir: dir}),
			dir:    dir,
		}
		ts.byConv[conv] = sess
	}
	return sess, nil
}

// currentTerminal returns the conversation's terminal, nil when it has none.
func (ts *toolSessions) currentTerminal(conv string) *terminal.Session {
	ts.mu.Lock()
	sess := ts.byConv[conv]
	ts.mu.Unlock()
	if sess == nil {
		return nil
	}
	return sess.currentTerminal()
}

// close ends a conversation's session without waiting for its call in progress: closing the
// terminal makes that call return.
func (ts *toolSessions) close(conv string) bool {
	ts.mu.Lock()
	sess := ts.byConv[conv]
	delete(ts.byConv, conv)
	ts.mu.Unlock()
	if sess == nil {
		return false
	}
	sess.closeTerminal()
	return true
}

func (ts *toolSessions) closeAll() {
	ts.mu.Lock()
	ts.closed = true
	all := ts.byConv
	ts.byConv = map[string]*toolSession{}
	ts.mu.Unlock()
	var wg sync.WaitGroup
	for _, sess := range all {
		wg.Go(sess.closeTerminal)
	}
	wg.Wait()
}

// closeTerminal closes the terminal, if the session has one, and keeps a call in progress from
// starting another.
func (sess *toolSession) closeTerminal() {
	sess.mu.Lock()
	t := sess.term
	sess.term = nil
	sess.closed = true
	sess.mu.Unlock()
	if t != nil {
		t.Close()
	}
}

// currentTerminal returns the terminal if one was started.
func (sess *toolSession) currentTerminal() *terminal.Session {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.term
}

// prepareOutputDir creates the default output directory with a .gitignore beside it that
// ignores everything agentd puts in the workspace.
func (ts *toolSessions) prepareOutputDir() {
	ts.prepared.Do(func() {
		dir := ts.s.cfg.ToolOutputDir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			ts.s.log.Warn("create tool output directory", "dir", dir, "err", err)
			return
		}
		if dir != filepath.Join(ts.s.cfg.Workspace, defaultOutputDir) {
			return
		}
		ignore := filepath.Join(filepath.Dir(dir), ".gitignore")
		if _, err := os.Stat(ignore); os.IsNotExist(err) {
			if err := os.WriteFile(ignore, []byte("# Written by agentd: tool outputs, not part of the project.\n*\n"), 0o644); err != nil {
				ts.s.log.Warn("write .gitignore", "path", ignore, "err", err)
			}
		}
	})
}

// terminal returns the session's terminal, creating it. The caller holds sess.lock.
func (ts *toolSessions) terminal(sess *toolSession) (*terminal.Session, error) {
	if t := sess.currentTerminal(); t != nil {
		return t, nil
	}
	ts.prepareOutputDir()
	t, err := terminal.New(terminal.Options{
		Dir:             sess.dir,
		Env:             ts.s.env,
		OutputDir:       ts.s.cfg.ToolOutputDir,
		NoChangeTimeout: ts.s.cfg.TerminalNoChangeTimeout,
		MaxWait:         ts.s.cfg.TerminalMaxWait,
		Credential:      ts.s.cfg.Credential,
	})
	if err != nil {
		return nil, err
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closed {
		return nil, errToolsClosed
	}
	sess.term = t
	return t, nil
}

// run runs one tool call for a conversation.
func (ts *toolSessions) run(ctx context.Context, name string, req runtimeclient.ToolRequest) (tool.Result, error) {
	conv, args := req.ConversationID, req.Arguments
	sess, err := ts.get(conv, req.WorkingDir)
	if err != nil {
		return tool.Result{}, err
	}
	select {
	case sess.lock <- struct{}{}:
		defer func() { <-sess.lock }()
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}

	switch name {
	case tool.Terminal:
		var a tool.TerminalArgs
		if res, ok := decodeArgs(name, args, &a); !ok {
			return res, nil
		}
		t, err := ts.terminal(sess)
		if errors.Is(err, errToolsClosed) {
			return tool.ErrorResult(name, "The conversation's tool session was closed."), nil
		}
		if err != nil {
			ts.s.log.Error("start terminal", "conversation_id", conv, "err", err)
			return tool.ErrorResult(name, "The terminal is not available in this sandbox: "+err.Error()), nil
		}
		t.SetEnv(req.Env)
		return t.Run(ctx, a, terminalWaits(req.Terminal)), nil
	case tool.FileEditor:
		var a tool.FileEditorArgs
		if res, ok := decodeArgs(name, args, &a); !ok {
			return res, nil
		}
		if t := sess.currentTerminal(); t != nil && t.Cwd() != "" {
			sess.editor.SetDir(t.Cwd()) // relative paths were most likely meant from there
		}
		return sess.editor.Run(a), nil
	case tool.Glob:
		var a tool.GlobArgs
		if res, ok := decodeArgs(name, args, &a); !ok {
			return res, nil
		}
		a.Path = cmp.Or(a.Path, sess.dir)
		return ts.search.Glob(ctx, a), nil
	case tool.Grep:
		var a tool.GrepArgs
		if res, ok := decodeArgs(name, args, &a); !ok {
			return res, nil
		}
		a.Path = cmp.Or(a.Path, sess.dir)
		return ts.search.Grep(ctx, a), nil
	}
	return tool.Result{}, errUnknownTool
}

var errUnknownTool = errors.New("unknown tool")

// decodeArgs decodes the model's arguments; when they do not fit, the result for the model
// says why.
func decodeArgs(name string, raw json.RawMessage, dst any) (tool.Result, bool) {
	err := tool.DecodeArgs(name, raw, dst)
	var ae *tool.ArgsError
	switch {
	case err == nil:
		return tool.Result{}, true
	case errors.As(err, &ae):
		return ae.Result(), false
	}
	// The tool and its argument type are fixed in run; this cannot happen.
	return tool.ErrorResult(name, "Internal error decoding the arguments."), false
}

func (s *Server) handleTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !tool.InSandbox(name) {
		writeDetail(w, http.StatusNotFound, "Not Found")
		return
	}
	body, ok := readBody(w, r, maxToolBodyBytes)
	if !ok {
		return
	}
	var req runtimeclient.ToolRequest
	err := wire.DecodeJSON(body, &req)
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
		return
	}
	if err != nil {
		s.log.Error("decode tool request", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if req.WorkingDir != "" {
		dir, ok := s.workingDir(w, req.WorkingDir)
		if !ok {
			return
		}
		req.WorkingDir = dir
	}
	res, err := s.tools.run(r.Context(), name, req)
	switch {
	case errors.Is(err, errToolsClosed):
		writeDetail(w, http.StatusServiceUnavailable, "The runtime is shutting down")
		return
	case r.Context().Err() != nil:
		return // the client went away; nobody reads an answer
	case err != nil:
		s.log.Error("run tool", "tool", name, "conversation_id", req.ConversationID, "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// workingDir checks a tool request's working directory: within the workspace (links
// included) and a directory. One that does not exist (yet) is the workspace's root: the
// conversation then works there.
func (s *Server) workingDir(w http.ResponseWriter, dir string) (string, bool) {
	if !filepath.IsAbs(dir) {
		writeDetail(w, http.StatusBadRequest, "working_dir must be an absolute path, not "+strconv.Quote(dir))
		return "", false
	}
	p, err := s.resolve(dir)
	if err != nil {
		s.writeFileError(w, "working directory", err)
		return "", false
	}
	_, real := s.workspaceRoots()
	fi, err := os.Stat(filepath.Join(real, p.rel))
	switch {
	case err != nil:
		return "", true
	case !fi.IsDir():
		writeDetail(w, http.StatusBadRequest, "working_dir "+strconv.Quote(dir)+" is not a directory")
		return "", false
	}
	return p.abs, true
}

func (s *Server) handleCloseToolSession(w http.ResponseWriter, r *http.Request) {
	conv := r.PathValue("conversation_id")
	closed := s.tools.close(conv)
	if s.mcp.close(conv) {
		closed = true
	}
	writeJSON(w, http.StatusOK, runtimeclient.CloseToolSessionResult{Closed: closed})
}

// interruptGrace is how long a command stopped for a pause gets to end at C-c before its
// terminal session is ended with it.
const interruptGrace = 10 * time.Second

// handleInterruptToolSession stops the command the conversation's terminal runs for a call
// nobody waits for any more (its agent was paused), and reports it.
func (s *Server) handleInterruptToolSession(w http.ResponseWriter, r *http.Request) {
	var out runtimeclient.InterruptResult
	if t := s.tools.currentTerminal(r.PathValue("conversation_id")); t != nil {
		res, ok := t.Interrupt(r.Context(), interruptGrace)
		if ok {
			out = runtimeclient.InterruptResult{Interrupted: true, Result: &res}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// maxToolBodyBytes bounds a tool request: room for a file_text at the editor's 10 MB bound
// with JSON escaping.
const maxToolBodyBytes = 32 << 20

// readBody reads a request body within limit bytes, answering the client itself when it
// cannot.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
			return nil, false
		}
		writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		return nil, false
	}
	return body, true
}

// terminalWaits converts the waits a request carries; nil or zero fields mean the
// terminal's own.
func terminalWaits(w *runtimeclient.TerminalWaits) terminal.Waits {
	if w == nil {
		return terminal.Waits{}
	}
	return terminal.Waits{
		NoChange: time.Duration(w.NoChangeTimeoutSeconds * float64(time.Second)),
		Max:      time.Duration(w.MaxWaitSeconds * float64(time.Second)),
	}
}
