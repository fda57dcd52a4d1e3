package search

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/tool"
)

// Glob lists the files under the search path whose relative path matches the pattern, most
// recently modified first.
func (s *Searcher) Glob(ctx context.Context, a tool.GlobArgs) tool.Result {
	obs := tool.GlobObservation{Kind: tool.KindGlob, Pattern: a.Pattern, Files: []string{}}
	fail := func(msg string) tool.Result {
		obs.IsError, obs.Content = true, tool.Content(msg)
		return tool.NewResult(msg, true, obs)
	}
	pat := a.Pattern
	rootArg := a.Path
	if filepath.IsAbs(pat) {
		// An absolute pattern carries its own root: its leading segments without wildcards.
		rootArg, pat = splitLiteralPrefix(pat)
	}
	root, fi, msg := s.checkDir(rootArg)
	obs.SearchPath = root
	if msg != "" {
		return fail(msg)
	}
	if !fi.IsDir() {
		return fail(fmt.Sprintf("%s is not a directory; glob searches directories.", root))
	}
	g, err := compileGlob(pat)
	if err != nil {
		return fail(fmt.Sprintf("Invalid glob pattern %q: %v.", a.Pattern, err))
	}

	var files []found
	stopped, err := s.walk(ctx, root,
		func(rel, name string) bool {
			if skippedByDefault(name) && !g.mentions(name) {
				return false
			}
			return g.couldMatchUnder(rel)
		},
		func(p, rel string, d fs.DirEntry) error {
			if !g.match(rel) {
				return nil
			}
			f := found{path: p}
			if info, err := d.Info(); err == nil {
				f.mtime = info.ModTime()
			}
			files = append(files, f)
			return nil
		})
	if err != nil {
		return fail(fmt.Sprintf("Cannot search %s: %v.", root, err))
	}
	slices.SortFunc(files, func(x, y found) int {
		if c := y.mtime.Compare(x.mtime); c != 0 {
			return c
		}
		return cmp.Compare(x.path, y.path)
	})

	total := len(files)
	if total > s.opts.MaxResults {
		files = files[:s.opts.MaxResults]
		obs.Truncated = true
	}
	var b strings.Builder
	if total == 0 {
		fmt.Fprintf(&b, "No files match %q in %s.", a.Pattern, root)
	} else {
		fmt.Fprintf(&b, "%d file(s) match %q in %s, most recently modified first:\n", total, a.Pattern, root)
		for _, f := range files {
			obs.Files = append(obs.Files, f.path)
			b.WriteString(f.path + "\n")
		}
		if obs.Truncated {
			fmt.Fprintf(&b, "(Only the first %d are listed: narrow the pattern or the path to see others.)\n", s.opts.MaxResults)
		}
	}
	if stopped != "" {
		obs.Truncated = true
		fmt.Fprintf(&b, "\nNote: %s, so files may be missing. Search a smaller directory.", stopped)
	}
	text := strings.TrimRight(b.String(), "\n")
	obs.Content = tool.Content(text)
	return tool.NewResult(text, false, obs)
}

// splitLiteralPrefix splits an absolute pattern into the directory made of its leading
// segments without wildcards and the rest: /src/app/**/*.go gives /src/app and **/*.go.
func splitLiteralPrefix(p string) (dir, rest string) {
	segs := strings.Split(p, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], "*?[{\\") {
		i++
	}
	dir = strings.Join(segs[:i], "/")
	if dir == "" {
		dir = "/"
	}
	return dir, strings.Join(segs[i:], "/")
}
