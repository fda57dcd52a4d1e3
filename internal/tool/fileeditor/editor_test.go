package fileeditor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/tool"
)

func ptr[T any](v T) *T { return &v }

func run(t *testing.T, e *Editor, a tool.FileEditorArgs) (tool.Result, tool.FileEditorObservation) {
	t.Helper()
	res := e.Run(a)
	var obs tool.FileEditorObservation
	if err := json.Unmarshal(res.Observation, &obs); err != nil {
		t.Fatalf("observation: %v", err)
	}
	if obs.Kind != tool.KindFileEditor || obs.IsError != res.IsError || obs.Command != string(a.Command) {
		t.Fatalf("observation %+v does not match result is_error %v", obs, res.IsError)
	}
	if len(obs.Content) != 1 || obs.Content[0].Text != res.Text {
		t.Fatalf("observation content %+v differs from text %q", obs.Content, res.Text)
	}
	return res, obs
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const sample = "alpha\nbeta\ngamma\nbeta\ndelta\n"

// TestCommands runs each command against a fresh directory holding f.txt (sample) and checks
// the answer and the file afterwards.
func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    func(dir string) tool.FileEditorArgs
		isError bool
		want    []string // substrings of the text
		file    string   // f.txt afterwards; "" means unchanged
	}{
		{
			name: "view file",
			args: func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt"} },
			want: []string{"     1\talpha\n     2\tbeta\n     3\tgamma\n     4\tbeta\n     5\tdelta\n"},
		},
		{
			name: "view range",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{2, 3}}
			},
			want: []string{"     2\tbeta\n     3\tgamma\n"},
		},
		{
			name: "view range to end",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{4, -1}}
			},
			want: []string{"     4\tbeta\n     5\tdelta\n"},
		},
		{
			name: "view range past end is clamped",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{5, 9}}
			},
			want: []string{"NOTE:", "has 5 lines", "     5\tdelta\n"},
		},
		{
			name: "view range start out of file",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{6, 7}}
			},
			isError: true, want: []string{"Invalid view_range [6 7]", "between 1 and 5"},
		},
		{
			name: "view range start zero",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{0, 2}}
			},
			isError: true, want: []string{"between 1 and 5"},
		},
		{
			name: "view range end before start",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/f.txt", ViewRange: []int{3, 2}}
			},
			isError: true, want: []string{"at least the first line"},
		},
		{
			name: "view range on directory",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d, ViewRange: []int{1, 2}}
			},
			isError: true, want: []string{"only applies to files"},
		},
		{
			name:    "relative path with hint",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: "f.txt"} },
			isError: true, want: []string{`"f.txt" is not absolute`, "Did you mean /"},
		},
		{
			name:    "relative path without hint",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: "nope.txt"} },
			isError: true, want: []string{"not absolute"},
		},
		{
			name:    "missing path",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: d + "/nope.txt"} },
			isError: true, want: []string{"does not exist"},
		},
		{
			name: "create",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "create", Path: d + "/new/dir/n.txt", FileText: ptr("new\n")}
			},
			want: []string{"File created at", "/new/dir/n.txt"},
		},
		{
			name: "create over existing",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "create", Path: d + "/f.txt", FileText: ptr("x")}
			},
			isError: true, want: []string{"already exists", "str_replace"},
		},
		{
			name:    "create without text",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "create", Path: d + "/n.txt"} },
			isError: true, want: []string{"Parameter `file_text` is required for command create."},
		},
		{
			name: "create over directory",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "create", Path: d + "/sub", FileText: ptr("x")}
			},
			isError: true, want: []string{"is a directory"},
		},
		{
			name: "str_replace",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("gamma\n"), NewStr: ptr("GAMMA\ngamma2\n")}
			},
			want: []string{"Edited", "     3\tGAMMA\n     4\tgamma2\n"},
			file: "alpha\nbeta\nGAMMA\ngamma2\nbeta\ndelta\n",
		},
		{
			name: "str_replace delete",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("alpha\n"), NewStr: ptr("")}
			},
			want: []string{"Edited"},
			file: "beta\ngamma\nbeta\ndelta\n",
		},
		{
			name: "str_replace with stray whitespace",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("  gamma  \n\n"), NewStr: ptr("\nGAMMA\n")}
			},
			want: []string{"Edited"},
			file: "alpha\nbeta\nGAMMA\nbeta\ndelta\n",
		},
		{
			name: "str_replace no match",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("Gamma"), NewStr: ptr("x")}
			},
			isError: true, want: []string{"does not occur", "exactly"},
		},
		{
			name: "str_replace multiple",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("beta"), NewStr: ptr("x")}
			},
			isError: true, want: []string{"occurs 2 times", "lines 2, 4"},
		},
		{
			name: "str_replace identical",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("gamma"), NewStr: ptr("gamma")}
			},
			isError: true, want: []string{"same as old_str"},
		},
		{
			name: "str_replace without new_str",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", OldStr: ptr("gamma")}
			},
			isError: true, want: []string{"Parameter `new_str` is required", "empty string"},
		},
		{
			name: "str_replace without old_str",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/f.txt", NewStr: ptr("x")}
			},
			isError: true, want: []string{"Parameter `old_str` is required"},
		},
		{
			name: "str_replace on directory",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/sub", OldStr: ptr("a"), NewStr: ptr("b")}
			},
			isError: true, want: []string{"is a directory; only the view command"},
		},
		{
			name: "insert at top",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "insert", Path: d + "/f.txt", InsertLine: ptr(0), NewStr: ptr("zero")}
			},
			want: []string{"Inserted 1 line(s)", "     1\tzero\n"},
			file: "zero\n" + sample,
		},
		{
			name: "insert at end",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "insert", Path: d + "/f.txt", InsertLine: ptr(5), NewStr: ptr("six\nseven\n")}
			},
			want: []string{"Inserted 2 line(s)", "     7\tseven\n"},
			file: sample + "six\nseven\n",
		},
		{
			name: "insert past end",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "insert", Path: d + "/f.txt", InsertLine: ptr(6), NewStr: ptr("x")}
			},
			isError: true, want: []string{"Invalid insert_line 6", "between 0 and 5"},
		},
		{
			name: "insert without line",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "insert", Path: d + "/f.txt", NewStr: ptr("x")}
			},
			isError: true, want: []string{"Parameter `insert_line` is required for command insert."},
		},
		{
			name: "insert without text",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "insert", Path: d + "/f.txt", InsertLine: ptr(1)}
			},
			isError: true, want: []string{"Parameter `new_str` is required for command insert."},
		},
		{
			name: "undo without history",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "undo_edit", Path: d + "/f.txt"}
			},
			isError: true, want: []string{"no edit of", "to undo"},
		},
		{
			name:    "binary file",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: d + "/bin.dat"} },
			isError: true, want: []string{"binary file"},
		},
		{
			name:    "image file",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: d + "/pic.png"} },
			isError: true, want: []string{"is an image"},
		},
		{
			name: "edit latin-1 file",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "str_replace", Path: d + "/latin1.txt", OldStr: ptr("caf"), NewStr: ptr("tea")}
			},
			isError: true, want: []string{"not UTF-8"},
		},
		{
			name: "view latin-1 file",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/latin1.txt"}
			},
			want: []string{"     1\tcaf\uFFFD\n"},
		},
		{
			name:    "too big",
			args:    func(d string) tool.FileEditorArgs { return tool.FileEditorArgs{Command: "view", Path: d + "/big.txt"} },
			isError: true, want: []string{"over the 10.0 MB limit"},
		},
		{
			name: "empty file",
			args: func(d string) tool.FileEditorArgs {
				return tool.FileEditorArgs{Command: "view", Path: d + "/empty.txt"}
			},
			want: []string{"is empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir+"/f.txt", sample)
			write(t, dir+"/bin.dat", "ab\x00cd")
			write(t, dir+"/pic.png", "\x89PNG\r\n\x1a\n\x00\x00")
			write(t, dir+"/latin1.txt", "caf\xe9\n")
			write(t, dir+"/empty.txt", "")
			if err := os.Mkdir(dir+"/sub", 0o755); err != nil {
				t.Fatal(err)
			}
			big, err := os.Create(dir + "/big.txt")
			if err != nil {
				t.Fatal(err)
			}
			if err := big.Truncate(DefaultMaxFileSize + 1); err != nil {
				t.Fatal(err)
			}
			big.Close()
			e := New(Options{Dir: dir})
			res, _ := run(t, e, tt.args(dir))
			if res.IsError != tt.isError {
				t.Fatalf("is_error %v, want %v: %s", res.IsError, tt.isError, res.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, res.Text)
				}
			}
			want := tt.file
			if want == "" {
				want = sample
			}
			if got := read(t, dir+"/f.txt"); got != want {
				t.Errorf("f.txt is %q, want %q", got, want)
			}
		})
	}
}

func TestViewDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a.txt", "src/main.go", "src/deep/x.go", "src/.hidden", ".git/config", "docs/readme.md"} {
		write(t, filepath.Join(dir, p), "x")
	}
	e := New(Options{})
	res, obs := run(t, e, tool.FileEditorArgs{Command: "view", Path: dir})
	want := "Files and directories up to 2 levels deep in " + dir + ", hidden items left out:\n" +
		dir + "/\n" +
		dir + "/a.txt\n" +
		dir + "/docs/\n" +
		dir + "/docs/readme.md\n" +
		dir + "/src/\n" +
		dir + "/src/deep/\n" +
		dir + "/src/main.go\n" +
		"\n2 hidden item(s) left out; list them with ls -la " + dir + " in the terminal.\n"
	if res.IsError || res.Text != want {
		t.Fatalf("listing\n got %q\nwant %q", res.Text, want)
	}
	if obs.OldContent != nil || obs.NewContent != nil || !obs.PrevExist {
		t.Fatalf("observation %+v", obs)
	}
}

func TestViewClipped(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for range 2000 {
		b.WriteString("a fairly long line of text to fill the view\n")
	}
	write(t, dir+"/long.txt", b.String())
	e := New(Options{})
	res, _ := run(t, e, tool.FileEditorArgs{Command: "view", Path: dir + "/long.txt"})
	if res.IsError || len([]rune(res.Text)) > DefaultMaxViewChars+200 || !strings.Contains(res.Text, "<response clipped") {
		t.Fatalf("len %d: %.200s", len(res.Text), res.Text)
	}
}

// TestUndoHistory edits a file several times and walks back, including past its creation.
func TestUndoHistory(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/u.txt"
	e := New(Options{HistoryDepth: 3})
	steps := []tool.FileEditorArgs{
		{Command: "create", Path: path, FileText: ptr("v0\n")},
		{Command: "str_replace", Path: path, OldStr: ptr("v0"), NewStr: ptr("v1")},
		{Command: "insert", Path: path, InsertLine: ptr(1), NewStr: ptr("v2")},
	}
	for _, a := range steps {
		if res, _ := run(t, e, a); res.IsError {
			t.Fatal(res.Text)
		}
	}
	if got := read(t, path); got != "v1\nv2\n" {
		t.Fatalf("after edits: %q", got)
	}
	res, obs := run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path})
	if res.IsError || read(t, path) != "v1\n" || *obs.OldContent != "v1\nv2\n" || *obs.NewContent != "v1\n" {
		t.Fatalf("first undo: %s", res.Text)
	}
	res, _ = run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path})
	if res.IsError || read(t, path) != "v0\n" {
		t.Fatalf("second undo: %s", res.Text)
	}
	res, _ = run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path})
	if res.IsError || !strings.Contains(res.Text, "creation") {
		t.Fatalf("third undo: %s", res.Text)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file survived undoing its creation: %v", err)
	}
	if res, _ = run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path}); !res.IsError {
		t.Fatalf("fourth undo: %s", res.Text)
	}

	// The history keeps only the last HistoryDepth edits.
	write(t, path, "0\n")
	for i := 1; i <= 5; i++ {
		old, next := string(rune('0'+i-1)), string(rune('0'+i))
		if res, _ := run(t, e, tool.FileEditorArgs{Command: "str_replace", Path: path, OldStr: &old, NewStr: &next}); res.IsError {
			t.Fatal(res.Text)
		}
	}
	for range 3 {
		if res, _ := run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path}); res.IsError {
			t.Fatal(res.Text)
		}
	}
	if got := read(t, path); got != "2\n" {
		t.Fatalf("after three undos: %q", got)
	}
	if res, _ := run(t, e, tool.FileEditorArgs{Command: "undo_edit", Path: path}); !res.IsError {
		t.Fatalf("undo beyond the depth: %s", res.Text)
	}
}

func TestObservationContents(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/o.txt"
	write(t, path, "one\n")
	e := New(Options{})
	_, obs := run(t, e, tool.FileEditorArgs{Command: "str_replace", Path: path, OldStr: ptr("one"), NewStr: ptr("two")})
	if !obs.PrevExist || *obs.OldContent != "one\n" || *obs.NewContent != "two\n" || obs.Path != path {
		t.Fatalf("observation %+v", obs)
	}
	_, obs = run(t, e, tool.FileEditorArgs{Command: "create", Path: dir + "/c.txt", FileText: ptr("c")})
	if obs.PrevExist || obs.OldContent != nil || *obs.NewContent != "c" {
		t.Fatalf("create observation %+v", obs)
	}
}

// TestWriteKeepsModeAndLinks checks that an edit keeps the file's mode and edits through a
// symbolic link instead of replacing it.
func TestWriteKeepsModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	target := dir + "/script.sh"
	write(t, target, "echo old\n")
	if err := os.Chmod(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := dir + "/link.sh"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	e := New(Options{})
	if res, _ := run(t, e, tool.FileEditorArgs{Command: "str_replace", Path: link, OldStr: ptr("old"), NewStr: ptr("new")}); res.IsError {
		t.Fatal(res.Text)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	fi, err = os.Stat(target)
	if err != nil || fi.Mode().Perm() != 0o755 || read(t, target) != "echo new\n" {
		t.Fatalf("target mode %v content %q", fi.Mode(), read(t, target))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
