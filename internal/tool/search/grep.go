package search

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/tool"
)

const (
	// linesPerFile is how many matching lines are shown per file.
	linesPerFile = 5
	// maxLineChars cuts long matching lines (minified code) in the listing.
	maxLineChars = 200
	// binarySniff is how much of a file is searched for a NUL byte to call it binary.
	binarySniff = 8000
	// maxMatchedFiles stops a search that matched this many files: more are of no use.
	maxMatchedFiles = 2000
)

type grepHit struct {
	found
	lines []string // "12: text" of the first matching lines
	count int      // matching lines in the file
}

// Grep lists the files under the search path with lines matching a regular expression, most
// recently modified first, each with its first matching lines.
func (s *Searcher) Grep(ctx context.Context, a tool.GrepArgs) tool.Result {
	obs := tool.GrepObservation{Kind: tool.KindGrep, Pattern: a.Pattern, IncludePattern: a.Include, Matches: []string{}}
	fail := func(msg string) tool.Result {
		obs.IsError, obs.Content = true, tool.Content(msg)
		return tool.NewResult(msg, true, obs)
	}
	root, fi, msg := s.checkDir(a.Path)
	obs.SearchPath = root
	if msg != "" {
		return fail(msg)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return fail(fmt.Sprintf("Invalid regular expression %q: %v. The syntax is RE2 (as in Go and ripgrep): no backreferences or lookaround; escape ( [ . * + ? { with a backslash to match them literally.",
			a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: ")))
	}
	pre := wholeFileFilter(a.Pattern)
	var include *pattern
	if a.Include != "" {
		if include, err = compileGlob(a.Include); err != nil {
			return fail(fmt.Sprintf("Invalid include pattern %q: %v.", a.Include, err))
		}
	}
	includes := func(rel string) bool {
		if include == nil {
			return true
		}
		if strings.Contains(a.Include, "/") {
			return include.match(rel)
		}
		return include.match(rel[strings.LastIndexByte(rel, '/')+1:])
	}

	var (
		mu      sync.Mutex
		hits    []grepHit
		stopped string
	)
	if !fi.IsDir() {
		if h, ok := s.grepFile(re, pre, root, fi.ModTime()); ok {
			hits = append(hits, h)
		}
	} else {
		paths := make(chan string, 64)
		var wg sync.WaitGroup
		for range max(2, runtime.GOMAXPROCS(0)) {
			wg.Go(func() {
				for p := range paths {
					info, err := os.Stat(p)
					if err != nil || info.Size() > s.opts.MaxFileSize {
						continue
					}
					if h, ok := s.grepFile(re, pre, p, info.ModTime()); ok {
						mu.Lock()
						hits = append(hits, h)
						mu.Unlock()
					}
				}
			})
		}
		stopped, err = s.walk(ctx, root,
			func(rel, name string) bool {
				if !skippedByDefault(name) {
					return true
				}
				return include != nil && include.mentions(name)
			},
			func(p, rel string, d fs.DirEntry) error {
				if !includes(rel) {
					return nil
				}
				mu.Lock()
				n := len(hits)
				mu.Unlock()
				if n >= maxMatchedFiles {
					return errStopped
				}
				select {
				case paths <- p:
				case <-ctx.Done():
				}
				return nil
			})
		close(paths)
		wg.Wait()
		if err != nil {
			return fail(fmt.Sprintf("Cannot search %s: %v.", root, err))
		}
		if len(hits) >= maxMatchedFiles {
			stopped = fmt.Sprintf("the search stopped after %d files with matches", maxMatchedFiles)
		}
	}

	slices.SortFunc(hits, func(x, y grepHit) int {
		if c := y.mtime.Compare(x.mtime); c != 0 {
			return c
		}
		return cmp.Compare(x.path, y.path)
	})
	total := len(hits)
	if total > s.opts.MaxResults {
		hits = hits[:s.opts.MaxResults]
		obs.Truncated = true
	}
	var b strings.Builder
	where := root
	if a.Include != "" {
		where += fmt.Sprintf(" (files matching %q)", a.Include)
	}
	if total == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s.", a.Pattern, where)
	} else {
		fmt.Fprintf(&b, "%d file(s) match %q in %s, most recently modified first:\n", total, a.Pattern, where)
		for _, h := range hits {
			obs.Matches = append(obs.Matches, h.path)
			fmt.Fprintf(&b, "\n%s\n", h.path)
			for _, l := range h.lines {
				fmt.Fprintf(&b, "  %s\n", l)
			}
			if more := h.count - len(h.lines); more > 0 {
				fmt.Fprintf(&b, "  (%d more matching line(s))\n", more)
			}
		}
		if obs.Truncated {
			fmt.Fprintf(&b, "\n(Only the first %d files are listed: narrow the pattern, path or include to see others.)\n", s.opts.MaxResults)
		}
	}
	if stopped != "" {
		obs.Truncated = true
		fmt.Fprintf(&b, "\nNote: %s, so matches may be missing. Search a smaller directory or use include.", stopped)
	}
	text := strings.TrimRight(b.String(), "\n")
	obs.Content = tool.Content(text)
	return tool.NewResult(text, false, obs)
}

// grepFile searches one file line by line; binary files never match.
// pre, when not nil, is a quick test on the whole file that every file with a matching line
// passes.
func (s *Searcher) grepFile(re, pre *regexp.Regexp, p string, mtime time.Time) (grepHit, bool) {
	data, err := os.ReadFile(p)
	if err != nil || int64(len(data)) > s.opts.MaxFileSize {
		return grepHit{}, false
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return grepHit{}, false
	}
	if pre != nil && !pre.Match(data) {
		return grepHit{}, false
	}
	h := grepHit{found: found{path: p, mtime: mtime}}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !re.Match(line) {
			continue
		}
		h.count++
		if len(h.lines) < linesPerFile {
			h.lines = append(h.lines, fmt.Sprintf("%d: %s", lineNo, shorten(line)))
		}
	}
	return h, h.count > 0
}

// shorten makes a matching line printable and bounded.
func shorten(line []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD"))
	if utf8.RuneCountInString(s) > maxLineChars {
		s = string([]rune(s)[:maxLineChars]) + " …"
	}
	return s
}

// wholeFileFilter compiles the pattern in multi-line mode, where ^ matches at every line
// start, so that one search of a whole file tells whether any line can match: a line's match
// is also a match in the file. Patterns with $ (which a CRLF line end would defeat) or anchored
// to the text's ends (\A, \z) are left to the line-by-line search.
func wholeFileFilter(pattern string) *regexp.Regexp {
	if strings.ContainsAny(pattern, "$") || strings.Contains(pattern, `\A`) || strings.Contains(pattern, `\z`) {
		return nil
	}
	pre, err := regexp.Compile("(?m:" + pattern + ")")
	if err != nil {
		return nil
	}
	return pre
}
