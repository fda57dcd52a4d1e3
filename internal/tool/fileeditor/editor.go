// Package fileeditor is the file_editor tool: view files and directories, create files, and
// edit them by exact string replacement or line insertion, with an undo history.
//
// Every failure is an observation with is_error set and a message that tells the model what
// to do instead; nothing here returns a Go error for bad input.
package fileeditor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/tool"
)

// Defaults.
const (
	DefaultMaxFileSize  = 10 << 20
	DefaultMaxViewChars = 16_000
	DefaultHistoryDepth = 5
)

// snippetContext is how many lines around an edit its snippet shows.
const snippetContext = 4

// Options configure an Editor.
type Options struct {
	// Dir is the directory a relative path was probably meant from (the workspace, or the
	// terminal's working directory); it only serves the hint for a relative path.
	Dir string
	// MaxFileSize bounds the files read and written; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxViewChars bounds the text of one view; 0 means DefaultMaxViewChars.
	MaxViewChars int
	// HistoryDepth is how many edits of one file undo_edit can revert; 0 means
	// DefaultHistoryDepth.
	HistoryDepth int
}

// Editor runs file_editor calls. It is safe for concurrent use; calls run one at a time, so
// that an edit and the history it records stay together.
type Editor struct {
	opts    Options
	mu      sync.Mutex
	history map[string][]version // by cleaned absolute path, oldest first
}

// version is a file's state before an edit.
type version struct {
	existed bool
	content string
	mode    os.FileMode
}

// New returns an editor with an empty history.
func New(opts Options) *Editor {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxViewChars <= 0 {
		opts.MaxViewChars = DefaultMaxViewChars
	}
	if opts.HistoryDepth <= 0 {
		opts.HistoryDepth = DefaultHistoryDepth
	}
	return &Editor{opts: opts, history: map[string][]version{}}
}

// SetDir changes the directory relative-path hints are based on.
func (e *Editor) SetDir(dir string) {
	e.mu.Lock()
	e.opts.Dir = dir
	e.mu.Unlock()
}

// call is one file_editor call in progress; its methods fill the observation.
type call struct {
	e   *Editor
	a   tool.FileEditorArgs
	obs tool.FileEditorObservation
}

// Run runs one file_editor call.
func (e *Editor) Run(a tool.FileEditorArgs) tool.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &call{e: e, a: a, obs: tool.FileEditorObservation{
		Kind:    tool.KindFileEditor,
		Command: string(a.Command),
		Path:    a.Path,
	}}
	if !filepath.IsAbs(a.Path) {
		msg := fmt.Sprintf("The path %q is not absolute: paths must start with /.", a.Path)
		if e.opts.Dir != "" && a.Path != "" {
			guess := filepath.Join(e.opts.Dir, a.Path)
			if _, err := os.Stat(guess); err == nil {
				msg += fmt.Sprintf(" Did you mean %s?", guess)
			}
		}
		return c.fail(msg)
	}
	path := filepath.Clean(a.Path)
	c.obs.Path = path
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	c.obs.PrevExist = exists
	switch {
	case a.Command == tool.EditorCreate && exists && fi.IsDir():
		return c.fail(fmt.Sprintf("Cannot create %s: it is a directory.", path))
	case a.Command == tool.EditorCreate && exists:
		return c.fail(fmt.Sprintf("Cannot create %s: the file already exists, and create never overwrites. Change it with str_replace or insert.", path))
	case a.Command == tool.EditorCreate:
	case a.Command == tool.EditorUndoEdit:
		// Undoing a create may find the file gone, or deleted since; the history decides.
	case !exists && os.IsNotExist(statErr):
		return c.fail(fmt.Sprintf("The path %s does not exist. View its parent directory to find the right path.", path))
	case !exists:
		return c.fail(fmt.Sprintf("Cannot access %s: %v.", path, unwrapPathError(statErr)))
	case fi.IsDir() && a.Command != tool.EditorView:
		return c.fail(fmt.Sprintf("%s is a directory; only the view command works on directories.", path))
	}

	switch a.Command {
	case tool.EditorView:
		if fi.IsDir() {
			return c.viewDir(path)
		}
		return c.viewFile(path, fi)
	case tool.EditorCreate:
		return c.create(path)
	case tool.EditorStrReplace:
		return c.strReplace(path, fi)
	case tool.EditorInsert:
		return c.insert(path, fi)
	case tool.EditorUndoEdit:
		return c.undo(path)
	}
	return c.fail(fmt.Sprintf("Unknown command %q.", a.Command))
}

// fail reports a failed call.
func (c *call) fail(msg string) tool.Result {
	c.obs.IsError = true
	c.obs.Content = tool.Content(msg)
	return tool.NewResult(msg, true, c.obs)
}

// ok reports a successful call.
func (c *call) ok(msg string) tool.Result {
	c.obs.Content = tool.Content(msg)
	return tool.NewResult(msg, false, c.obs)
}

// need reports a missing parameter, or "" if it is present.
func (c *call) need(name string, present bool) string {
	if present {
		return ""
	}
	return fmt.Sprintf("Parameter `%s` is required for command %s.", name, c.a.Command)
}

// record keeps path's state before an edit, dropping the oldest beyond the history depth.
func (e *Editor) record(path string, v version) {
	h := append(e.history[path], v)
	if len(h) > e.opts.HistoryDepth {
		h = h[len(h)-e.opts.HistoryDepth:]
	}
	e.history[path] = h
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// numbered renders lines cat -n style, the first numbered first.
func numbered(lines []string, first int) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", first+i, l)
	}
	return b.String()
}

// splitLines splits content into lines without their newlines; a final newline does not
// start another line, and empty content has no lines.
func splitLines(content string) []string {
	if content == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}
