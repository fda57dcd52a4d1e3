// Package search is the glob and grep tools: find files by path pattern and by content under
// a directory of the sandbox.
//
// Both walk the tree themselves (no external programs), skip hidden directories and
// node_modules unless the search names them, and stop after a bounded number of entries or a
// bounded time, so that a huge tree answers with a partial result instead of hanging the call.
package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultMaxResults  = 100
	DefaultMaxVisited  = 200_000
	DefaultMaxDuration = 30 * time.Second
	DefaultMaxFileSize = 10 << 20
)

// Options configure a Searcher.
type Options struct {
	// Root is the default search directory, and the base of relative paths. Required.
	Root string
	// MaxResults bounds the files listed; 0 means DefaultMaxResults.
	MaxResults int
	// MaxVisited bounds the entries one walk looks at; 0 means DefaultMaxVisited.
	MaxVisited int
	// MaxDuration bounds one walk; 0 means DefaultMaxDuration.
	MaxDuration time.Duration
	// MaxFileSize is the size above which grep skips a file; 0 means DefaultMaxFileSize.
	MaxFileSize int64
}

// Searcher runs glob and grep calls. It holds no state and is safe for concurrent use.
type Searcher struct{ opts Options }

// New returns a Searcher.
func New(opts Options) *Searcher {
	if opts.MaxResults <= 0 {
		opts.MaxResults = DefaultMaxResults
	}
	if opts.MaxVisited <= 0 {
		opts.MaxVisited = DefaultMaxVisited
	}
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = DefaultMaxDuration
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	return &Searcher{opts: opts}
}

// resolve turns the path argument into an absolute, clean path; empty means the root.
func (s *Searcher) resolve(p string) string {
	switch {
	case p == "":
		return filepath.Clean(s.opts.Root)
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(s.opts.Root, p)
}

// errStopped ends a walk that reached its bounds.
var errStopped = errors.New("search stopped")

// walk visits the files under root, calling visit with each regular file's path relative to
// root (slash-separated) and its entry. Hidden directories and node_modules are skipped unless
// enter allows them; enterDir may prune others. It reports why it stopped early, or "".
func (s *Searcher) walk(ctx context.Context, root string, enterDir func(rel, name string) bool, visit func(path, rel string, d fs.DirEntry) error) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.MaxDuration)
	defer cancel()
	visited := 0
	stopped := ""
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // an unreadable entry below the root is skipped
		}
		visited++
		if visited > s.opts.MaxVisited {
			stopped = fmt.Sprintf("the search stopped after looking at %d entries", s.opts.MaxVisited)
			return errStopped
		}
		if visited%256 == 0 && ctx.Err() != nil {
			stopped = "the search ran out of time"
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				stopped = "the search was cancelled"
			}
			return errStopped
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == root {
				return nil
			}
			if !enterDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return visit(p, rel, d)
	})
	if errors.Is(err, errStopped) {
		return stopped, nil
	}
	return stopped, err
}

// skippedByDefault reports whether a directory is left out unless the search names it.
func skippedByDefault(name string) bool {
	return name == ".git" || strings.HasPrefix(name, ".") || name == "node_modules"
}

// checkDir resolves the path argument and checks it exists.
func (s *Searcher) checkDir(p string) (string, os.FileInfo, string) {
	root := s.resolve(p)
	fi, err := os.Stat(root)
	if err != nil {
		if os.IsNotExist(err) {
			return root, nil, fmt.Sprintf("The path %s does not exist.", root)
		}
		return root, nil, fmt.Sprintf("Cannot search %s: %v.", root, err)
	}
	return root, fi, ""
}

type found struct {
	path  string
	mtime time.Time
}
