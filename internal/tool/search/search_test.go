package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// tree makes files under a temporary directory; each file's mtime is its index in seconds
// after a base time, so "newest first" has a known order.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var files = map[string]string{
	"main.go":              "package main\n\nfunc main() {\n\tHello()\n}\n",
	"hello.go":             "package main\n\n// Hello greets.\nfunc Hello() { println(\"hello\") }\n",
	"README.md":            "# Hello\nSay hello.\n",
	"src/app/app.ts":       "export const hello = 1;\n",
	"src/app/view.tsx":     "const HELLO = <b/>;\n",
	"src/lib/util.js":      "module.exports = {}\n",
	"docs/a/b/c/deep.md":   "hello from deep\n",
	".git/config":          "hello = git\n",
	".github/ci.yml":       "name: hello\n",
	"node_modules/x/x.js":  "hello\n",
	"bin/tool":             "ELF\x00hello\x00",
	"crlf.txt":             "first line\r\nhello there\r\n",
	"noeol.txt":            "no newline hello",
	"many.txt":             "x1\nx2\nx3\nx4\nx5\nx6\nx7\n",
	"docs/notes/hello.txt": "nothing here\n",
}

func relPaths(root string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(p, root+"/")
	}
	return out
}

func TestGlob(t *testing.T) {
	root := tree(t, files)
	s := New(Options{Root: root})
	tests := []struct {
		pattern, path string
		want          []string // relative to root, newest first
		isError       bool
	}{
		{pattern: "*.go", want: []string{"main.go", "hello.go"}},
		{pattern: "**/*.go", want: []string{"main.go", "hello.go"}},
		{pattern: "**/*.md", want: []string{"docs/a/b/c/deep.md", "README.md"}},
		{pattern: "src/**/*.{ts,tsx}", want: []string{"src/app/view.tsx", "src/app/app.ts"}},
		{pattern: "src/*/app.ts", want: []string{"src/app/app.ts"}},
		{pattern: "./src/lib/*", want: []string{"src/lib/util.js"}},
		{pattern: "**/hello*", want: []string{"hello.go", "docs/notes/hello.txt"}},
		{pattern: "*.js", path: "src/lib", want: []string{"src/lib/util.js"}},
		{pattern: "*.js", path: root + "/src/lib", want: []string{"src/lib/util.js"}},
		{pattern: root + "/src/**/*.ts", want: []string{"src/app/app.ts"}},
		{pattern: "**/*.yml", want: nil},
		{pattern: ".github/*.yml", want: []string{".github/ci.yml"}},
		{pattern: "node_modules/**/*.js", want: []string{"node_modules/x/x.js"}},
		{pattern: "**/*.nothing", want: nil},
		{pattern: "[", isError: true},
		{pattern: "*", path: "missing", isError: true},
		{pattern: "*", path: "main.go", isError: true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" in "+tt.path, func(t *testing.T) {
			res := s.Glob(context.Background(), tool.GlobArgs{Pattern: tt.pattern, Path: tt.path})
			var obs tool.GlobObservation
			if err := json.Unmarshal(res.Observation, &obs); err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError || obs.IsError != tt.isError || obs.Kind != tool.KindGlob {
				t.Fatalf("is_error %v: %s", res.IsError, res.Text)
			}
			if tt.isError {
				return
			}
			got := relPaths(root, obs.Files)
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("files %q, want %q\n%s", got, tt.want, res.Text)
			}
			for _, f := range obs.Files {
				if !strings.Contains(res.Text, f+"\n") && !strings.HasSuffix(res.Text, f) {
					t.Fatalf("text lacks %s:\n%s", f, res.Text)
				}
			}
			if len(tt.want) == 0 && !strings.Contains(res.Text, "No files match") {
				t.Fatalf("text: %s", res.Text)
			}
		})
	}
}

func TestGrep(t *testing.T) {
	root := tree(t, files)
	s := New(Options{Root: root})
	tests := []struct {
		pattern, path, include string
		want                   []string
		lines                  []string // substrings of the text
		isError                bool
	}{
		{pattern: "hello", want: []string{"src/app/app.ts", "noeol.txt", "hello.go", "docs/a/b/c/deep.md", "crlf.txt", "README.md"},
			lines: []string{"2: hello there", "1: no newline hello", "4: func Hello() { println(\"hello\") }", "2: Say hello."}},
		{pattern: "(?i)hello", include: "*.go", want: []string{"main.go", "hello.go"}, lines: []string{"4: Hello()", "3: // Hello greets."}},
		{pattern: `x\d`, want: []string{"many.txt"}, lines: []string{"5: x5", "(2 more matching line(s))"}},
		{pattern: "^func ", include: "*.go", want: []string{"main.go", "hello.go"}},
		{pattern: "there$", want: []string{"crlf.txt"}},
		{pattern: "hello", include: "*.{ts,tsx}", want: []string{"src/app/app.ts"}},
		{pattern: "(?i)hello", path: "src", include: "app/*.tsx", want: []string{"src/app/view.tsx"}},
		{pattern: "hello", path: "README.md", want: []string{"README.md"}},
		{pattern: "hello", include: ".github/*", want: []string{".github/ci.yml"}},
		{pattern: "absent", want: nil, lines: []string{"No matches"}},
		{pattern: "(unclosed", isError: true, lines: []string{"Invalid regular expression", "RE2"}},
		{pattern: "x", path: "/does/not/exist", isError: true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.include, func(t *testing.T) {
			res := s.Grep(context.Background(), tool.GrepArgs{Pattern: tt.pattern, Path: tt.path, Include: tt.include})
			var obs tool.GrepObservation
			if err := json.Unmarshal(res.Observation, &obs); err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError || obs.Kind != tool.KindGrep {
				t.Fatalf("is_error %v: %s", res.IsError, res.Text)
			}
			for _, l := range tt.lines {
				if !strings.Contains(res.Text, l) {
					t.Errorf("text lacks %q:\n%s", l, res.Text)
				}
			}
			if tt.isError {
				return
			}
			got := relPaths(root, obs.Matches)
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("matches %q, want %q\n%s", got, tt.want, res.Text)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	many := map[string]string{}
	for i := range 150 {
		many[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = "needle\n"
	}
	root := tree(t, many)

	s := New(Options{Root: root})
	res := s.Glob(context.Background(), tool.GlobArgs{Pattern: "**/*.txt"})
	var gobs tool.GlobObservation
	json.Unmarshal(res.Observation, &gobs)
	if len(gobs.Files) != 100 || !gobs.Truncated || !strings.Contains(res.Text, "150 file(s) match") || !strings.HasSuffix(gobs.Files[0], "d6/f146.txt") {
		t.Fatalf("glob: %d files, truncated %v:\n%.300s", len(gobs.Files), gobs.Truncated, res.Text)
	}
	res = s.Grep(context.Background(), tool.GrepArgs{Pattern: "needle"})
	var robs tool.GrepObservation
	json.Unmarshal(res.Observation, &robs)
	if len(robs.Matches) != 100 || !robs.Truncated || !strings.Contains(res.Text, "150 file(s) match") {
		t.Fatalf("grep: %d files, truncated %v", len(robs.Matches), robs.Truncated)
	}

	// A walk bounded to 20 entries stops and says so.
	small := New(Options{Root: root, MaxVisited: 20})
	res = small.Glob(context.Background(), tool.GlobArgs{Pattern: "**/*.txt"})
	if res.IsError || !strings.Contains(res.Text, "stopped after looking at 20 entries") {
		t.Fatalf("bounded glob: %s", res.Text)
	}
	res = small.Grep(context.Background(), tool.GrepArgs{Pattern: "needle"})
	if res.IsError || !strings.Contains(res.Text, "stopped after looking at 20 entries") {
		t.Fatalf("bounded grep: %s", res.Text)
	}

	// A cancelled context ends the walk.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = New(Options{Root: root}).Grep(ctx, tool.GrepArgs{Pattern: "needle"})
	if res.IsError {
		t.Fatalf("cancelled grep: %s", res.Text)
	}

	// Files over the size bound are skipped.
	big := filepath.Join(root, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("needle\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	res = New(Options{Root: root, MaxFileSize: 100}).Grep(context.Background(), tool.GrepArgs{Pattern: "needle", Include: "big.txt"})
	if !strings.Contains(res.Text, "No matches") {
		t.Fatalf("big file searched: %s", res.Text)
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "d/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "d/e/a.go", true},
		{"d/**", "d/e/a.go", true},
		{"d/**/a.go", "d/a.go", true},
		{"d/**/**/a.go", "d/x/y/a.go", true},
		{"a**b.go", "axxb.go", true},
		{"{a,b}/*.go", "b/x.go", true},
		{"{a,b/{c,d}}/*.go", "b/d/x.go", true},
		{"x{y}z", "x{y}z", true},
		{"[ab].go", "b.go", true},
		{"?.go", "ab.go", false},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	g, _ := compileGlob("src/*/x.go")
	for dir, want := range map[string]bool{"src": true, "src/a": true, "src/a/b": false, "lib": false} {
		if got := g.couldMatchUnder(dir); got != want {
			t.Errorf("couldMatchUnder(%q) = %v, want %v", dir, got, want)
		}
	}
}
