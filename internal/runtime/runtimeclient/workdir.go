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
	// GitAfterAnswer asks for the answer as soon as the directory is made, before the
	// repository, which the runtime then makes while every later request but the probes,
	// the identity and the skill files waits for it (WorkDirGitStarted). It travels as the
	// header "Prefer: respond-async" (RFC 7240), so that a runtime from before it, which
	// does not know the preference, makes the repository first, as it always did.
	GitAfterAnswer bool `json:"-"`
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
	// The repository is being made after the answer (GitAfterAnswer); the runtime logs a
	// failure.
	WorkDirGitStarted = "started"
)

// PreferAsync is the preference (RFC 7240) a request sends in its Prefer header to have its
// slow part done after the answer; a server that does so says it in Preference-Applied.
const PreferAsync = "respond-async"

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
	var h http.Header
	if req.GitAfterAnswer && req.Git != nil {
		h = http.Header{"Prefer": {PreferAsync}}
	}
	if err := c.callWith(ctx, http.MethodPost, "/api/work-dir", h, req, &res); err != nil {
		return WorkDirResult{}, fmt.Errorf("runtime work directory: %w", err)
	}
	return res, nil
}
