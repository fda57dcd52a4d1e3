package textdiff

import (
	"strings"
	"testing"
)

func TestCompareGroupsChangesInHunks(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	after := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"
	d := Compare(before, after, 100)
	if d.Added != 2 || d.Removed != 1 || d.Omitted != 0 {
		t.Fatalf("+%d -%d, %d omitted; want +2 -1, none omitted", d.Added, d.Removed, d.Omitted)
	}
	if len(d.Hunks) != 2 {
		t.Fatalf("%d hunks, want 2 (the changes are more than twice the context apart): %+v", len(d.Hunks), d.Hunks)
	}
	if h := d.Hunks[0].Header; h != "@@ -1,5 +1,5 @@" {
		t.Errorf("first hunk %q", h)
	}
	last := d.Hunks[1].Lines[len(d.Hunks[1].Lines)-1]
	if last.Op != "+" || !last.Added() || last.Gone() || last.Text != "l" || last.New != 12 || last.Old != 0 {
		t.Errorf("last line %+v, want +l at new line 12", last)
	}
	if d := Compare("same\n", "same\n", 100); len(d.Hunks) != 0 || d.Added+d.Removed != 0 {
		t.Errorf("an unchanged text: %+v", d)
	}
	// Changes closer than twice the context share one hunk.
	if d := Compare("a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", 100); len(d.Hunks) != 1 || d.Hunks[0].Header != "@@ -1,5 +1,5 @@" {
		t.Errorf("close changes: %+v", d.Hunks)
	}
}

func TestCompareBoundsTheLinesShown(t *testing.T) {
	var big strings.Builder
	for range 2500 {
		big.WriteString("line\n")
	}
	d := Compare("", big.String(), 2000)
	shown := 0
	for _, h := range d.Hunks {
		shown += len(h.Lines)
	}
	if shown != 2000 || d.Omitted != 500 || d.Added != 2500 {
		t.Errorf("shows %d lines, omits %d, counts %d added; want 2000, 500 and 2500", shown, d.Omitted, d.Added)
	}
	// Only changed lines count as omitted, not the context around them: of -b +B c -d +D,
	// the two lines shown are a and -b.
	d = Compare("a\nb\nc\nd\n", "a\nB\nc\nD\n", 2)
	if d.Omitted != 3 {
		t.Errorf("omits %d changed lines, want 3: %+v", d.Omitted, d.Hunks)
	}
}

func TestUnified(t *testing.T) {
	got := strings.Join(Compare("a\nb\nc\n", "a\nB\nc\n", 100).Unified("a/x.go", "b/x.go"), "\n")
	want := "--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"
	if got != want {
		t.Errorf("unified:\n%s\nwant:\n%s", got, want)
	}
	// A new file: nothing before it, its lines from line 1; a text without a final line end
	// still ends its last line.
	got = strings.Join(Compare("", "package x\n\nfunc f() {}", 100).Unified("/dev/null", "b/n.go"), "\n")
	want = "--- /dev/null\n+++ b/n.go\n@@ -0,0 +1,3 @@\n+package x\n+\n+func f() {}"
	if got != want {
		t.Errorf("unified of a new file:\n%s\nwant:\n%s", got, want)
	}
	if u := Compare("same", "same", 100).Unified("a", "b"); u != nil {
		t.Errorf("unified of no change: %q", u)
	}
}
