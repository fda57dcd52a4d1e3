package runtime

import (
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

// maxBodyBytes bounds a request body; a command line longer than this is not a command.
const maxBodyBytes = 8 << 20

func (s *Server) handleAlive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, "OK")
}

func (s *Server) handleIdentity(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, runtimeclient.Identity{
		SandboxID: s.cfg.SandboxID,
		Workspace: s.cfg.Workspace,
		PID:       os.Getpid(),
		Version:   s.cfg.Version,
		StartedAt: s.startedAt,
	})
}

func (s *Server) handleCommand(w http.ResponseWriter, r *http.Request) {
	req, ok := s.commandRequest(w, r)
	if !ok {
		return
	}
	res, err := s.runCommand(r.Context(), req, nil)
	if err != nil {
		s.log.Error("run command", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// commandRequest reads and checks the body of a command request, or answers the problem
// and reports false.
func (s *Server) commandRequest(w http.ResponseWriter, r *http.Request) (runtimeclient.CommandRequest, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeDetail(w, http.StatusRequestEntityTooLarge, "Request body too large")
			return runtimeclient.CommandRequest{}, false
		}
		writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		return runtimeclient.CommandRequest{}, false
	}
	req, err := decodeCommandRequest(body)
	if err == nil {
		err = s.checkCwd(&req)
	}
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
		return runtimeclient.CommandRequest{}, false
	}
	if err != nil {
		s.log.Error("decode command", "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return runtimeclient.CommandRequest{}, false
	}
	return req, true
}
