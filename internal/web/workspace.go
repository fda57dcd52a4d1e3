package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// The Changes and Files tabs of a conversation: the workspace's git changes, one file's diff
// and the list of its files, read from the sandbox's runtime as the API's workspace routes
// read them, and rendered here so that a diff reads the same as an edit of the agent's.

// maxWorkspaceAnswer bounds an answer of the runtime read whole (two texts of a diff).
const maxWorkspaceAnswer = 32 << 20

// errWorkspaceClosed says why a workspace cannot be read now.
var errWorkspaceClosed = errors.New("the workspace can be read while the conversation's sandbox runs")

// workspaceJSON reads a workspace route of the conversation's sandbox into out.
func (a *App) workspaceJSON(ctx context.Context, ownerID, convID, route string, q url.Values, out any) (sandboxID string, err error) {
	v, err := a.d.Conversations.Get(ctx, ownerID, convID)
	if err != nil {
		return "", err
	}
	if v.SandboxID == "" || v.SandboxStatus != sandbox.StatusRunning {
		return v.SandboxID, errWorkspaceClosed
	}
	c, err := a.d.Sandboxes.Client(ctx, ownerID, v.SandboxID)
	if err != nil {
		if errors.Is(err, sandbox.ErrState) {
			return v.SandboxID, errWorkspaceClosed
		}
		return v.SandboxID, err
	}
	resp, err := c.Workspace(ctx, runtimeclient.WorkspaceRequest{Method: http.MethodGet, Route: route, Query: q})
	if err != nil {
		return v.SandboxID, fmt.Errorf("workspace %s of sandbox %s: %w", route, v.SandboxID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWorkspaceAnswer+1))
	if err != nil {
		return v.SandboxID, fmt.Errorf("workspace %s of sandbox %s: %w", route, v.SandboxID, err)
	}
	if resp.StatusCode != http.StatusOK {
		var d struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &d)
		return v.SandboxID, &webError{status: http.StatusOK, msg: orDefault(d.Detail, "The sandbox could not answer ("+resp.Status+").")}
	}
	if len(body) > maxWorkspaceAnswer {
		return v.SandboxID, &webError{status: http.StatusOK, msg: "The answer is too large to show."}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return v.SandboxID, fmt.Errorf("workspace %s of sandbox %s: %w", route, v.SandboxID, err)
	}
	return v.SandboxID, nil
}

// problemText is what a tab says in place of its content when err says why it has none, or
// "" when err is another failure.
func problemText(err error) string {
	var we *webError
	switch {
	case errors.Is(err, errWorkspaceClosed):
		return "The workspace can be read while the conversation's sandbox runs."
	case errors.As(err, &we):
		return we.msg
	}
	return ""
}

type changesData struct {
	ID      string
	Changes []runtimeclient.GitChange
	Problem string
}

func (a *App) changesFragment(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	d := changesData{ID: r.PathValue("id")}
	if _, err := a.workspaceJSON(r.Context(), s.User.ID, d.ID, runtimeclient.RouteGitChanges, nil, &d.Changes); err != nil {
		if d.Problem = problemText(err); d.Problem == "" {
			return err
		}
	}
	return a.fragment(w, r, "changes", d)
}

func (a *App) diffFragment(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	path := r.URL.Query().Get("path")
	if path == "" {
		return &webError{http.StatusBadRequest, "Which file? The path is missing."}
	}
	var gd runtimeclient.GitDiff
	if _, err := a.workspaceJSON(r.Context(), s.User.ID, r.PathValue("id"), runtimeclient.RouteGitDiff, url.Values{"path": {path}}, &gd); err != nil {
		msg := problemText(err)
		if msg == "" {
			return err
		}
		return a.fragment(w, r, "changes", changesData{Problem: msg})
	}
	before, after := "", ""
	if gd.Original != nil {
		before = *gd.Original
	}
	if gd.Modified != nil {
		after = *gd.Modified
	}
	d := lineDiff(path, before, after)
	d.ShowPath = true
	d.Created, d.Deleted = gd.Original == nil && gd.Modified != nil, gd.Modified == nil && gd.Original != nil
	d.Binary = strings.ContainsRune(before, 0) || strings.ContainsRune(after, 0)
	return a.fragment(w, r, "diff", d)
}

type filesData struct {
	SandboxID string
	Files     []string
	More      bool
	Problem   string
}

// maxListedFiles is how many files the Files tab lists (the runtime lists at most 2000).
const maxListedFiles = 2000

func (a *App) filesFragment(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	var d filesData
	var err error
	if d.SandboxID, err = a.workspaceJSON(r.Context(), s.User.ID, r.PathValue("id"), runtimeclient.RouteFileTree, nil, &d.Files); err != nil {
		if d.Problem = problemText(err); d.Problem == "" {
			return err
		}
	}
	d.More = len(d.Files) >= maxListedFiles
	return a.fragment(w, r, "files", d)
}
