package terminal

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommands(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  int
	}{
		{"one", "ls -la", 1},
		{"chained", "cd /x && make; echo done", 1},
		{"two lines", "ls\npwd", 2},
		{"blank lines and comments", "\n# list\nls\n\n", 1},
		{"comment with quote", "ls # don't\npwd", 2},
		{"continuation", "echo a \\\n  b", 1},
		{"pipe at end", "cat f |\n  grep x", 1},
		{"and at end", "make &&\n  make install", 1},
		{"single quotes", "echo 'a\nb'", 1},
		{"double quotes", "echo \"a\nb\"", 1},
		{"escaped quote", "echo \"a\\\"\nb\"", 1},
		{"ansi-c quotes", "echo $'it\\'s\n'", 1},
		{"backticks", "echo `ls\n`", 1},
		{"heredoc", "cat <<EOF > f\nline 1\nline 2\nEOF", 1},
		{"quoted heredoc", "cat <<'END'\n$x\nEND", 1},
		{"heredoc with tabs", "cat <<-EOF\n\tx\n\tEOF", 1},
		{"heredoc then command", "cat <<EOF\nx\nEOF\nls", 2},
		{"here string", "cat <<< hi\nls", 2},
		{"if block", "if true; then\n  echo y\nfi", 1},
		{"for block", "for i in 1 2; do\n  echo $i\ndone", 1},
		{"while block", "while read l; do\n echo $l\ndone < f", 1},
		{"case block", "case $x in\n  a) echo a;;\n  *) echo other;;\nesac", 1},
		{"function", "f() {\n  echo in f\n}", 1},
		{"function keyword", "function f {\n  echo x\n}", 1},
		{"subshell", "(\n  cd /tmp\n  ls\n)", 1},
		{"command substitution", "x=$(\n  ls\n)", 1},
		{"brace group", "{\n  echo a\n  echo b\n} > out", 1},
		{"keyword as argument", "echo if\nls", 2},
		{"block then command", "if x; then y; fi\nls", 2},
		{"python heredoc", "python3 - <<'PY'\nif x:\n    print('a')\nPY", 1},
		{"three", "a\nb\nc", 3},
		{"crlf", "ls\r\npwd\r\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitCommands(tt.input)
			if len(got) != tt.want {
				t.Fatalf("%d commands %q, want %d", len(got), got, tt.want)
			}
		})
	}
	if got := splitCommands("\n# first list\nls\n"); !slices.Equal(got, []string{"ls"}) {
		t.Fatalf("split %q", got)
	}
	if got := splitCommands("cd /tmp\n# c\nls -l"); !slices.Equal(got, []string{"cd /tmp", "ls -l"}) {
		t.Fatalf("split %q", got)
	}
}

func TestLooksLikeData(t *testing.T) {
	for s, want := range map[string]bool{
		`{"a": 1}`:        true,
		`[1, 2]`:          true,
		`[ -f x ] && ls`:  false,
		`{ echo a; }`:     false,
		`ls`:              false,
		` ["x", "y"]  `:   true,
		`[[ -n $x ]]`:     false,
		`{a,b}`:           false,
		`echo '{"a": 1}'`: false,
	} {
		if got := looksLikeData(s); got != want {
			t.Errorf("looksLikeData(%q) = %v", s, got)
		}
	}
}

func TestCleanOutput(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"a\r\nb\r\n", "a\nb"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"10%\r50%\r100%\r\n", "100%"},
		{"abc\bd", "abd"},
		{"bell\x07", "bell"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"tab\tkept\n\n\n", "tab\tkept"},
		{"\x1b(Bplain\x1b[?25l", "plain"},
	}
	for _, tt := range tests {
		if got := cleanOutput([]byte(tt.raw)); got != tt.want {
			t.Errorf("cleanOutput(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

func TestStripEcho(t *testing.T) {
	for _, tt := range []struct{ out, cmd, want string }{
		{"ls\na b", "ls", "a b"},
		{"lsof", "ls", "lsof"},
		{"a b", "ls", "a b"},
		{"echo x\nx", "echo x\n", "x"},
	} {
		if got := stripEcho(tt.out, tt.cmd); got != tt.want {
			t.Errorf("stripEcho(%q, %q) = %q", tt.out, tt.cmd, got)
		}
	}
}

func TestKeyBytes(t *testing.T) {
	for name, want := range map[string]string{
		"C-c": "\x03", "c-d": "\x04", "C-Z": "\x1a", "C-a": "\x01",
		"UP": "\x1b[A", "down": "\x1b[B", "ENTER": "\r", "TAB": "\t", "ESC": "\x1b", "BS": "\x7f", "PGDN": "\x1b[6~",
	} {
		if got, ok := keyBytes(name); !ok || got != want {
			t.Errorf("keyBytes(%q) = %q, %v", name, got, ok)
		}
	}
	for _, name := range []string{"hello", "C-", "C-1", "C-cc", "", "F1"} {
		if _, ok := keyBytes(name); ok {
			t.Errorf("keyBytes(%q) is a key", name)
		}
	}
}

func TestCapBuffer(t *testing.T) {
	b := capBuffer{limit: 64 << 10}
	var written int64
	for i := range 100 {
		chunk := fmt.Sprintf("%05d%s\n", i, strings.Repeat("x", 4<<10))
		b.Write([]byte(chunk))
		written += int64(len(chunk))
	}
	b.Write([]byte("END"))
	written += 3
	out, dropped := b.Take()
	s := string(out)
	kept := int64(strings.Count(s, "x"))
	if len(out) > 64<<10+100 || !strings.HasPrefix(s, "00000x") || !strings.HasSuffix(s, "END") {
		t.Fatalf("len %d, starts %.10q, ends %q", len(out), s, s[len(s)-10:])
	}
	// What was dropped, what was kept and the marker between them add up to what was written.
	marker := fmt.Sprintf("\n[... %d bytes of output were not kept ...]\n", dropped)
	if dropped <= 0 || !strings.Contains(s, marker) || int64(len(out)-len(marker))+dropped != written {
		t.Fatalf("dropped %d, kept %d bytes (%d x), written %d", dropped, len(out), kept, written)
	}
	if out, dropped := b.Take(); len(out) != 0 || dropped != 0 {
		t.Fatal("Take did not empty the buffer")
	}

	// Under the limit, nothing is dropped or marked.
	b.Write([]byte("short"))
	if out, dropped := b.Take(); string(out) != "short" || dropped != 0 {
		t.Fatalf("%q, %d", out, dropped)
	}
}

func TestParsePrompt(t *testing.T) {
	pr, ok := parsePrompt([]byte("130\x1f42\x1fme\x1fbox\x1f/usr/bin/python3\x1f/a/b\x1fc"))
	if !ok || pr != (prompt{exitCode: 130, pid: 42, user: "me", host: "box", python: "/usr/bin/python3", cwd: "/a/b\x1fc"}) {
		t.Fatalf("%+v %v", pr, ok)
	}
	for _, bad := range []string{"", "x\x1f1\x1fa\x1fb\x1fc\x1fd", "0\x1f1\x1fa"} {
		if _, ok := parsePrompt([]byte(bad)); ok {
			t.Errorf("parsePrompt(%q) ok", bad)
		}
	}
}

func TestColourOutput(t *testing.T) {
	tests := []struct{ raw, colour string }{
		{"\x1b[1;31mred\x1b[0m plain\r\n", "\x1b[1;31mred\x1b[0m plain"},
		{"\x1b]0;title\x07\x1b[2K\x1b[32mok\x1b[m", "\x1b[32mok\x1b[m"},
		{"10%\r\x1b[33m100%\x1b[0m\r\n", "\x1b[33m100%\x1b[0m"},
		{"ab\bc\x07", "ac"},
		{"\x1b[?25lplain", "plain"},
	}
	for _, tt := range tests {
		got := colourOutput([]byte(tt.raw))
		if got != tt.colour {
			t.Errorf("colourOutput(%q) = %q, want %q", tt.raw, got, tt.colour)
		}
		if plain, want := stripColour(got), cleanOutput([]byte(tt.raw)); plain != want {
			t.Errorf("stripColour(colourOutput(%q)) = %q, want cleanOutput's %q", tt.raw, plain, want)
		}
	}
}
