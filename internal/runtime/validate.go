package runtime

import (
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/wire"
)

// decodeCommandRequest parses and validates a POST /api/command body, reporting every problem
// at once in FastAPI's shape.
func decodeCommandRequest(data []byte) (runtimeclient.CommandRequest, error) {
	var req runtimeclient.CommandRequest
	err := wire.DecodeJSON(data, &req)
	return req, err
}

// checkCwd resolves req.Cwd against the workspace and checks that it is a directory.
func (s *Server) checkCwd(req *runtimeclient.CommandRequest) error {
	dir := s.cfg.Workspace
	if req.Cwd != "" {
		dir = req.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.cfg.Workspace, dir)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		c := wire.NewChecker("body")
		c.ValueError("not a directory: "+dir, "cwd")
		return c.Err()
	}
	req.Cwd = filepath.Clean(dir)
	return nil
}
