package runtimeclient

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// WorkDirRequest is the body of POST /api/work-dir: a directory of the workspace to make (with
// its parents, as mkdir -p does), and, when Git is set and the directory holds no repository
// yet, a git repository there whose commits Git's author makes. It is what a conversation's
// start needs before its agent's first step, in one request and at most one process (git
// init).
type WorkDirRequest struct {
	// Dir is relative to the workspace.
	Dir string      `json:"dir" wire:"required"`
	Git *WorkDirGit `json:"git"`
}

// WorkDirGit is the commit author of a repository made by POST /api/work-dir.
type WorkDirGit struct {
	Name  string `json:"name" wire:"required"`
	Email string `json:"email" wire:"required"`
}

// The outcomes of a WorkDirRequest's Git.
const (
	WorkDirGitCreated = "created" // git init ran, and the author is in the repository's config
	WorkDirGitExists  = "exists"  // the directory held a repository already: left as it was
	WorkDirGitMissing = "missing" // git is not installed in the sandbox
	WorkDirGitFailed  = "failed"  // git init failed: Detail says how
)

// WorkDirResult is the answer to POST /api/work-dir. The directory exists when it is given;
// the repository is a best effort, whose outcome Git says ("" when none was asked for).
type WorkDirResult struct {
	Git    string `json:"git"`
	Detail string `json:"detail,omitempty"`
}

// WireStrict rejects fields the runtime does not know.
func (WorkDirRequest) WireStrict() {}

// ValidateWire keeps the directory relative and inside the workspace, and the author on one
// line each, as a git configuration value must be.
func (r *WorkDirRequest) ValidateWire(c *wire.Checker) {
	if !localPath(r.Dir) {
		c.ValueError("the directory must be a clean relative path inside the workspace", "dir")
	}
	if r.Git != nil {
		for field, v := range map[string]string{"name": r.Git.Name, "email": r.Git.Email} {
			if strings.ContainsAny(v, "\n\r\x00") {
				c.ValueError("must be one line", "git", field)
			}
		}
	}
}

// WorkDir makes a directory of the sandbox's workspace, and a git repository there as req
// asks.
func (c *Client) WorkDir(ctx context.Context, req WorkDirRequest) (WorkDirResult, error) {
	var res WorkDirResult
	if err := c.call(ctx, http.MethodPost, "/api/work-dir", req, &res); err != nil {
		return WorkDirResult{}, fmt.Errorf("runtime work directory: %w", err)
	}
	return res, nil
}
