package runtimeclient

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// SkillFilesRequest is the body of POST /api/skill-files: where to look for the guidance a
// repository keeps for agents (its instruction files and skill directories), and how much to
// read. The caller says where; the runtime only finds and reads, confined to the workspace.
type SkillFilesRequest struct {
	// Dirs are the directories to look in, relative to the workspace ("" is the workspace
	// itself), in order. One that does not exist is passed over.
	Dirs []string `json:"dirs" wire:"required,maxlen=8"`
	// RootFiles are file names looked for directly in each of Dirs, ignoring case, in order.
	RootFiles []string `json:"root_files" wire:"maxlen=32"`
	// SkillDirs are directories below each of Dirs whose Markdown files (*.md, at any depth)
	// are read, in order.
	SkillDirs []string `json:"skill_dirs" wire:"maxlen=16"`
	// Exclude are file names (ignoring case) in SkillDirs that are not read.
	Exclude []string `json:"exclude" wire:"maxlen=16"`
	// MaxFiles bounds the files listed; MaxFileBytes the size of one file read (a larger one
	// is listed with too_large and not read); MaxTotalBytes the bytes read in all.
	MaxFiles      int   `json:"max_files" wire:"required,min=1,max=1000"`
	MaxFileBytes  int64 `json:"max_file_bytes" wire:"required,min=1,max=8388608"`
	MaxTotalBytes int64 `json:"max_total_bytes" wire:"required,min=1,max=67108864"`
}

// SkillFile is one file found.
type SkillFile struct {
	// Dir and SkillDir are the entries of the request it was found under (SkillDir empty for
	// a root file); Path is its path below SkillDir, or its name as found for a root file.
	Dir      string `json:"dir"`
	SkillDir string `json:"skill_dir"`
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	// Content is the file's bytes, absent when it is too large or could not be read.
	Content  []byte `json:"content,omitempty"`
	TooLarge bool   `json:"too_large,omitempty"`
	// Problem says why a file that exists could not be read.
	Problem string `json:"problem,omitempty"`
}

// SkillFilesResult is the answer to POST /api/skill-files.
type SkillFilesResult struct {
	Files []SkillFile `json:"files"`
	// Truncated says that more files were there than the bounds let through.
	Truncated bool `json:"truncated"`
}

// WireStrict rejects fields the runtime does not know.
func (SkillFilesRequest) WireStrict() {}

// ValidateWire keeps every path relative and inside the workspace.
func (r *SkillFilesRequest) ValidateWire(c *wire.Checker) {
	for i, d := range r.Dirs {
		if d != "" && !localPath(d) {
			c.ValueError("a directory must be a clean relative path inside the workspace", "dirs", i)
		}
	}
	for i, d := range r.SkillDirs {
		if !localPath(d) {
			c.ValueError("a skill directory must be a clean relative path", "skill_dirs", i)
		}
	}
	for i, n := range r.RootFiles {
		if n == "" || strings.ContainsAny(n, "/\x00") || n == "." || n == ".." {
			c.ValueError("a root file must be a plain file name", "root_files", i)
		}
	}
}

func localPath(p string) bool {
	return p != "" && !strings.ContainsRune(p, 0) && path.Clean(p) == p && fs.ValidPath(p) && p != "."
}

// SkillFiles finds and reads the files req names in the sandbox's workspace.
func (c *Client) SkillFiles(ctx context.Context, req SkillFilesRequest) (SkillFilesResult, error) {
	var res SkillFilesResult
	if err := c.call(ctx, http.MethodPost, "/api/skill-files", req, &res); err != nil {
		return SkillFilesResult{}, fmt.Errorf("runtime skill files: %w", err)
	}
	return res, nil
}
