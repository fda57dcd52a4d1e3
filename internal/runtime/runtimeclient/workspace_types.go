package runtimeclient

import "time"

// The workspace routes read and write the sandbox's workspace without the agent. agentd
// relays their answers as they are: for download, upload, archive and the git routes, the
// ones OpenHands' agent server gives on the same paths; the tree is the answer of OpenHands'
// per-conversation file list, serve its static workspace files; the directory listing is
// agentd's own.

// Workspace limits.
const (
	// DefaultMaxUploadBytes bounds one uploaded file when the runtime is given no bound of
	// its own (ServerConfig.MaxUploadBytes). The control plane applies its own, configured,
	// bound before the runtime's.
	DefaultMaxUploadBytes = 4 << 30
	// MaxDiffFileBytes bounds each side of a file's diff, as in OpenHands.
	MaxDiffFileBytes = 1 << 20
	// MaxTreeFiles bounds the files of a workspace tree listing, as in OpenHands.
	MaxTreeFiles = 2000
)

// FileListQuery is the query of GET /api/file/list.
type FileListQuery struct {
	Path   string `query:"path" doc:"Directory to list: absolute (inside the workspace) or relative to the workspace; empty means the workspace."`
	PageID string `query:"page_id" doc:"next_page_id of the previous page."`
	Limit  int    `query:"limit" wire:"min=1,max=1000,default=1000"`
}

// FileEntry is one entry of a directory. Symbolic links are listed as they are, not followed.
type FileEntry struct {
	Name string `json:"name"`
	// Path is absolute, as the sandbox sees it: what the other workspace routes take.
	Path string `json:"path"`
	// Type is file, directory, symlink or other (a device, socket or pipe).
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// FilePage is one page of a directory listing, in the byte order of the names.
type FilePage struct {
	Items      []FileEntry `json:"items"`
	NextPageID *string     `json:"next_page_id"`
}

// FileTreeQuery is the query of GET /api/file/tree.
type FileTreeQuery struct {
	Path string `query:"path" doc:"Directory whose files to list; empty means the workspace."`
}

// FileQuery names one file (GET /api/file/download, POST /api/file/upload).
type FileQuery struct {
	Path string `query:"path" wire:"required" doc:"The file: absolute (inside the workspace) or relative to the workspace."`
}

// ArchiveQuery is the query of GET /api/file/archive.
type ArchiveQuery struct {
	Path   string `query:"path" doc:"Directory to archive; empty means the workspace."`
	Format string `query:"format" doc:"tar.gz, the only format served (also the default)."`
	// Exclude adds glob patterns, matched against each path component, to the defaults.
	Exclude            []string `query:"exclude" doc:"Glob patterns to leave out, matched against every path component (repeatable)."`
	UseDefaultExcludes *bool    `query:"use_default_excludes" doc:"Leave out dependency and build directories (node_modules, .venv, dist, ...); default true."`
}

// GitChangesQuery is the query of GET /api/git/changes.
type GitChangesQuery struct {
	Path string `query:"path" doc:"Directory of the repository (or holding repositories one level down); empty means the workspace."`
	Ref  string `query:"ref" doc:"Commit to compare with; default: the branch's upstream, else the fork point from the default branch, else HEAD."`
}

// GitDiffQuery is the query of GET /api/git/diff.
type GitDiffQuery struct {
	Path string `query:"path" wire:"required" doc:"The file: absolute (inside the workspace) or relative to the workspace."`
	Ref  string `query:"ref" doc:"Commit to compare with; default as for the changes."`
}

// Git change statuses, as OpenHands names them. A rename is a DELETED and an ADDED, as there;
// MOVED is never reported.
const (
	GitAdded   = "ADDED"
	GitDeleted = "DELETED"
	GitUpdated = "UPDATED"
	GitMoved   = "MOVED"
)

// GitChange is one changed file of GET /api/git/changes.
type GitChange struct {
	// Status is ADDED, DELETED, UPDATED or MOVED.
	Status string `json:"status"`
	// Path is relative to the directory asked about, with forward slashes.
	Path string `json:"path"`
}

// GitDiff is the answer of GET /api/git/diff: the file's text now and at the base. Both are
// null when the file is in no repository; a side where the file does not exist, or is not
// UTF-8 text, is "".
type GitDiff struct {
	Modified *string `json:"modified"`
	Original *string `json:"original"`
}

// UploadResult is the answer of an upload, as OpenHands gives it.
type UploadResult struct {
	Success bool `json:"success"`
}
