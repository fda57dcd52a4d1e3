package runtime

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

func (s *Server) bashRoutes() {
	s.mux.Handle(runtimeclient.RouteBashStart, only(http.MethodPost, s.handleBashStart))
	s.mux.Handle(runtimeclient.RouteBashExecute, only(http.MethodPost, s.handleBashExecute))
	s.mux.Handle(runtimeclient.RouteBashSearch, only(http.MethodGet, s.handleBashSearch))
	s.mux.Handle(runtimeclient.RouteBashEvents+"{event_id}", only(http.MethodGet, s.handleBashEvent))
}

func (s *Server) handleBashStart(w http.ResponseWriter, r *http.Request) {
	cmd, _, ok := s.startBash(w, r)
	if ok {
		writeJSON(w, http.StatusOK, cmd)
	}
}

// handleBashExecute runs a command and answers its output once it has ended. A client that
// goes away does not stop it: it ends at its timeout as a started one does.
func (s *Server) handleBashExecute(w http.ResponseWriter, r *http.Request) {
	cmd, done, ok := s.startBash(w, r)
	if !ok {
		return
	}
	select {
	case <-done:
	case <-r.Context().Done():
		return
	}
	out, found := s.bash.output(cmd.ID)
	if !found {
		writeDetail(w, http.StatusNotFound, "The command's output was dropped: too many bash events since it started")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleBashSearch(w http.ResponseWriter, r *http.Request) {
	var q runtimeclient.BashSearchQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	writeJSON(w, http.StatusOK, s.bash.search(q))
}

func (s *Server) handleBashEvent(w http.ResponseWriter, r *http.Request) {
	e, ok := s.bash.get(r.PathValue("event_id"))
	if !ok {
		writeDetail(w, http.StatusNotFound, "No such bash event")
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// startBash reads, checks and starts the command of a request, or answers the problem and
// reports false.
func (s *Server) startBash(w http.ResponseWriter, r *http.Request) (runtimeclient.BashEvent, <-chan struct{}, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
		} else {
			writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		}
		return runtimeclient.BashEvent{}, nil, false
	}
	var req runtimeclient.BashRequest
	err = wire.DecodeJSON(body, &req)
	var dir string
	if err == nil {
		dir, err = s.bashDir(req)
	}
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
		return runtimeclient.BashEvent{}, nil, false
	}
	if err != nil {
		s.log.Error("decode bash command", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return runtimeclient.BashEvent{}, nil, false
	}
	cmd, done, err := s.bash.start(req, dir)
	if err != nil {
		writeDetail(w, http.StatusServiceUnavailable, "The runtime is shutting down")
		return runtimeclient.BashEvent{}, nil, false
	}
	return cmd, done, true
}

// bashDir checks a command's cwd as a terminal command's is checked: no NUL, a directory,
// relative ones taken from the workspace.
func (s *Server) bashDir(req runtimeclient.BashRequest) (string, error) {
	c := wire.NewChecker("body")
	if strings.ContainsRune(req.Command, 0) {
		c.ValueError("command must not contain NUL bytes", "command")
	}
	cr := runtimeclient.CommandRequest{}
	if req.Cwd != nil {
		if strings.ContainsRune(*req.Cwd, 0) {
			c.ValueError("cwd must not contain NUL bytes", "cwd")
		}
		cr.Cwd = *req.Cwd
	}
	if err := c.Err(); err != nil {
		return "", err
	}
	if err := s.checkCwd(&cr); err != nil {
		return "", err
	}
	return cr.Cwd, nil
}
