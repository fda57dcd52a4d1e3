package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// A conversation's workspace, read and written without its agent. The work is the sandbox
// runtime's (its workspace routes confine every path to the workspace); agentd finds the
// caller's sandbox, relays the request and streams the answer back, files and archives
// included, without holding them whole.

// maxInlineFileBytes bounds a file answered as a JSON string (the V1 /file route); a larger
// one is for the download route.
const maxInlineFileBytes = 8 << 20

// relayedAnswerHeaders are the runtime's headers a relayed answer keeps.
var relayedAnswerHeaders = []string{
	"Content-Type", "Content-Length", "Content-Disposition", "Content-Range", "Accept-Ranges",
	"Last-Modified", "ETag", "Content-Security-Policy", "X-Content-Type-Options",
}

// workspaceAnswer sends a request to the workspace route of a sandbox's runtime, with the
// request's body when it has one, and returns the runtime's answer for the caller to relay or
// read; the caller closes its body.
func (a *API) workspaceAnswer(r *http.Request, sandboxID, route string, q url.Values) (*http.Response, error) {
	c, err := a.d.Sandboxes.Client(r.Context(), caller(r).ID, sandboxID)
	if err != nil {
		return nil, err
	}
	wr := runtimeclient.WorkspaceRequest{Method: r.Method, Route: route, Query: q, Header: r.Header}
	var body *watchedBody
	if r.Method == http.MethodPost {
		body = &watchedBody{ReadCloser: r.Body}
		wr.Body, wr.Size, wr.MaxUploadBytes = body, r.ContentLength, a.d.MaxUploadBytes
	}
	resp, err := c.Workspace(r.Context(), wr)
	if body != nil && body.failure() != nil {
		// The client's body broke off or went over its bound: that, not whatever the
		// runtime made of the rest, is the answer.
		if resp != nil {
			resp.Body.Close()
		}
		return nil, bodyError(body.failure())
	}
	if err != nil {
		return nil, fmt.Errorf("workspace request to sandbox %s: %w", sandboxID, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, fmt.Errorf("workspace request to sandbox %s: the runtime refused its session key", sandboxID)
	}
	return resp, nil
}

// relayWorkspace relays a workspace request and streams the runtime's answer: its status,
// its headers that describe the content, and its body.
func (a *API) relayWorkspace(w http.ResponseWriter, r *http.Request, sandboxID, route string, q url.Values) error {
	resp, err := a.workspaceAnswer(r, sandboxID, route, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	h := w.Header()
	for _, name := range relayedAnswerHeaders {
		if v := resp.Header.Values(name); len(v) > 0 {
			h[name] = v
		}
	}
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil && r.Context().Err() == nil {
		// The status is sent: breaking the connection is the only way left to tell the
		// client that what it got is not whole (a runtime that stopped mid-archive).
		a.log.Warn("workspace answer cut short", "path", r.URL.Path, "sandbox_id", sandboxID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// watchedBody remembers why reading a client's body failed, so that a body over its bound
// is answered 413 whatever the runtime answered to the part it got. The transport may still
// be reading it when the runtime's answer is back, hence the lock.
type watchedBody struct {
	io.ReadCloser
	mu  sync.Mutex
	err error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
	}
	return n, err
}

func (b *watchedBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// agentServerWorkspace relays one of the agent server's workspace routes, whose query is the
// runtime's.
func (a *API) agentServerWorkspace(route string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		return a.relayWorkspace(w, r, r.PathValue("sandbox_id"), route, r.URL.Query())
	}
}

// agentServerByPath relays the older routes that take the path in the URL
// (/api/git/changes/{path}, /api/file/download/{path}), which OpenHands clients of late 2025
// still call.
func (a *API) agentServerByPath(route string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		q.Set("path", r.PathValue("path"))
		return a.relayWorkspace(w, r, r.PathValue("sandbox_id"), route, q)
	}
}

// serveWorkspaceFile serves a file of the conversation's working directory as a static site does:
// inline, a directory standing for its index.html.
func (a *API) serveWorkspaceFile(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	// A relative path is below the conversation's working directory ("" stands for it), which
	// the runtime takes from the workspace; the runtime refuses a path out of the workspace.
	p := r.PathValue("file_path")
	if !path.IsAbs(p) {
		p = path.Join(v.WorkDir, p)
	}
	return a.relayWorkspace(w, r, v.SandboxID, runtimeclient.RouteFileServe, url.Values{"path": {p}})
}

// appConversationSandbox returns the sandbox of the caller's conversation in the path, and a
// function that takes a path of the client's from the conversation's working directory: a
// relative one (and "") is below it, as the conversation's agent sees it, an absolute one is as
// it is.
func (a *API) appConversationSandbox(r *http.Request) (string, func(string) string, error) {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return "", nil, err
	}
	v, err := a.d.Conversations.Get(r.Context(), caller(r).ID, id)
	if err != nil {
		return "", nil, err
	}
	if v.SandboxID == "" {
		return "", nil, conversation.ErrNotReady
	}
	at := func(p string) string {
		if path.IsAbs(p) {
			return p
		}
		return path.Join(v.WorkDir, p) // the runtime takes it from the workspace
	}
	return v.SandboxID, at, nil
}

// appConversationFile answers a workspace file's text as a JSON string, and "" when there is
// no such file, as OpenHands does for clients that look for a plan file that may not exist.
func (a *API) appConversationFile(w http.ResponseWriter, r *http.Request) error {
	sandboxID, at, err := a.appConversationSandbox(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationFileQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	resp, err := a.workspaceAnswer(r, sandboxID, runtimeclient.RouteFileDownload, url.Values{"path": {at(q.FilePath)}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		writeJSON(w, http.StatusOK, "")
		return nil
	case resp.StatusCode != http.StatusOK:
		return runtimeRefusal(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxInlineFileBytes+1))
	switch {
	case err != nil:
		return fmt.Errorf("read workspace file: %w", err)
	case len(b) > maxInlineFileBytes:
		return errStatus(http.StatusRequestEntityTooLarge, fmt.Sprintf("The file is larger than %d bytes: download it instead", maxInlineFileBytes))
	case !utf8.Valid(b):
		b = nil // not text: as OpenHands, nothing to show
	}
	writeJSON(w, http.StatusOK, string(b))
	return nil
}

// appConversationFiles lists the regular files below a workspace directory; a directory that
// does not exist has none, as in OpenHands.
func (a *API) appConversationFiles(w http.ResponseWriter, r *http.Request) error {
	sandboxID, at, err := a.appConversationSandbox(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationFilesQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	resp, err := a.workspaceAnswer(r, sandboxID, runtimeclient.RouteFileTree, url.Values{"path": {at(q.Path)}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		writeJSON(w, http.StatusOK, []string{})
		return nil
	default:
		return runtimeRefusal(resp)
	}
	var files []string
	if err := json.NewDecoder(resp.Body).Decode(&files); err != nil {
		return fmt.Errorf("decode the workspace tree: %w", err)
	}
	writeJSON(w, http.StatusOK, files)
	return nil
}

// appConversationGit relays a git route for a conversation; the query is the runtime's.
func (a *API) appConversationGit(route string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		sandboxID, at, err := a.appConversationSandbox(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		if q.Get("path") != "" || route == runtimeclient.RouteGitChanges { // changes default to the conversation's
			q.Set("path", at(q.Get("path")))
		}
		return a.relayWorkspace(w, r, sandboxID, route, q)
	}
}

// runtimeRefusal turns a runtime's answer other than 200 into the client's: the runtime
// words its refusals for clients ({"detail": ...}); its own failures stay in the log.
func runtimeRefusal(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 500 {
		return fmt.Errorf("workspace: runtime answered %d: %s", resp.StatusCode, b)
	}
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &body) == nil && len(body.Detail) > 0 {
		var s string
		if json.Unmarshal(body.Detail, &s) == nil {
			return errStatus(resp.StatusCode, s)
		}
		return &relayedProblem{status: resp.StatusCode, body: b}
	}
	return errStatus(resp.StatusCode, http.StatusText(resp.StatusCode))
}

// relayedProblem is a runtime's refusal whose detail is not a string (FastAPI's list of
// problems), passed on as it is.
type relayedProblem struct {
	status int
	body   []byte
}

func (e *relayedProblem) Error() string { return string(e.body) }
