package runtime

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// WireStrict rejects fields the runtime does not know.
func (CommandRequest) WireStrict() {}

// ValidateWire rejects values no shell can take.
func (r *CommandRequest) ValidateWire(c *wire.Checker) {
	if strings.ContainsRune(r.Command, 0) {
		c.ValueError("command must not contain NUL bytes", "command")
	}
	if strings.ContainsRune(r.Cwd, 0) {
		c.ValueError("cwd must not contain NUL bytes", "cwd")
	}
	for k, v := range r.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			c.ValueError("an environment variable name must be non-empty and contain no '=' or NUL", "env", k)
		case strings.ContainsRune(v, 0):
			c.ValueError("an environment value must not contain NUL bytes", "env", k)
		}
	}
}

// WireStrict rejects fields the runtime does not know.
func (ToolRequest) WireStrict() {}

// ValidateWire rejects a conversation id that could not be a key in logs.
func (r *ToolRequest) ValidateWire(c *wire.Checker) {
	if strings.ContainsFunc(r.ConversationID, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		c.ValueError("conversation_id must not contain control characters", "conversation_id")
	}
}

// decodeCommandRequest parses and validates a POST /api/command body, reporting every problem
// at once in FastAPI's shape.
func decodeCommandRequest(data []byte) (CommandRequest, error) {
	var req CommandRequest
	err := wire.DecodeJSON(data, &req)
	return req, err
}

// checkCwd resolves req.Cwd against the workspace and checks that it is a directory.
func (s *Server) checkCwd(req *CommandRequest) error {
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
