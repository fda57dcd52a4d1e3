// Package textdiff compares two texts line by line and groups what changed in hunks, as a
// unified diff shows them: the changed lines with a few unchanged ones around them, each
// line with its numbers before and after. The web app and the command line show a file's
// change through it.
package textdiff

import (
	"fmt"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

const (
	// Context is how many unchanged lines are shown around a change.
	Context = 3
	// timeout bounds the work of one comparison: past it, the diff found so far (correct but
	// maybe longer than the shortest) is what Compare returns.
	timeout = 2 * time.Second
)

// Line is one line of a hunk. Op is "+", "-" or " "; a number is 0 where the line does not
// exist on that side.
type Line struct {
	Op       string
	Old, New int
	Text     string
}

// Added says the line is new.
func (l Line) Added() bool { return l.Op == "+" }

// Gone says the line was removed.
func (l Line) Gone() bool { return l.Op == "-" }

// Hunk is a run of changed lines with their context, under its @@ header.
type Hunk struct {
	Header string
	Lines  []Line
}

// Diff is the change from one text to another.
type Diff struct {
	Hunks          []Hunk
	Added, Removed int
	// Omitted counts the changed lines left out past the bound Compare was given.
	Omitted int
}

// Compare compares two texts line by line. The hunks show at most maxLines lines in all
// (none when maxLines is 0 or less); Omitted counts the changed lines past them.
func Compare(before, after string, maxLines int) Diff {
	var d Diff
	if before == after {
		return d
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = timeout
	a, b, lines := dmp.DiffLinesToRunes(before, after)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines)

	// Flatten into lines with their numbers.
	var all []Line
	oldNo, newNo := 1, 1
	for _, c := range diffs {
		for _, text := range splitLines(c.Text) {
			l := Line{Text: text}
			switch c.Type {
			case diffmatchpatch.DiffEqual:
				l.Op, l.Old, l.New = " ", oldNo, newNo
				oldNo++
				newNo++
			case diffmatchpatch.DiffDelete:
				l.Op, l.Old = "-", oldNo
				oldNo++
				d.Removed++
			case diffmatchpatch.DiffInsert:
				l.Op, l.New = "+", newNo
				newNo++
				d.Added++
			}
			all = append(all, l)
		}
	}
	d.Hunks, d.Omitted = hunks(all, max(maxLines, 0))
	return d
}

// Unified returns the diff as the lines of a unified diff between the files named from and
// to: the two file lines, then each hunk's header and lines. It is empty when nothing
// changed.
func (d Diff) Unified(from, to string) []string {
	if len(d.Hunks) == 0 {
		return nil
	}
	out := []string{"--- " + from, "+++ " + to}
	for _, h := range d.Hunks {
		out = append(out, h.Header)
		for _, l := range h.Lines {
			out = append(out, l.Op+l.Text)
		}
	}
	return out
}

// splitLines splits a diff's text into its lines, without their line ends; a text that does
// not end in a line end still ends its last line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	for i, l := range out {
		out[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
	}
	return out
}

// hunks groups the changed lines with Context lines around them, at most maxLines in all;
// it returns the changed lines it left out.
func hunks(all []Line, maxLines int) ([]Hunk, int) {
	var out []Hunk
	shown, omitted := 0, 0
	i := 0
	for i < len(all) {
		// Find the next change.
		for i < len(all) && all[i].Op == " " {
			i++
		}
		if i == len(all) {
			break
		}
		start := max(0, i-Context)
		end := i
		// Extend while changes come within twice the context of each other.
		for end < len(all) {
			if all[end].Op != " " {
				end++
				continue
			}
			run := end
			for run < len(all) && all[run].Op == " " {
				run++
			}
			if run == len(all) || run-end > 2*Context {
				end = min(len(all), end+Context)
				break
			}
			end = run
		}
		lines := all[start:end]
		if shown+len(lines) > maxLines {
			keep := max(0, maxLines-shown)
			for _, l := range lines[keep:] {
				if l.Op != " " {
					omitted++
				}
			}
			for _, l := range all[end:] {
				if l.Op != " " {
					omitted++
				}
			}
			lines = lines[:keep]
			if len(lines) > 0 {
				out = append(out, Hunk{Header: header(lines), Lines: lines})
			}
			return out, omitted
		}
		shown += len(lines)
		out = append(out, Hunk{Header: header(lines), Lines: lines})
		i = end
	}
	return out, omitted
}

// header is a hunk's @@ line.
func header(lines []Line) string {
	oldStart, newStart, oldN, newN := 0, 0, 0, 0
	for _, l := range lines {
		if l.Old > 0 {
			if oldStart == 0 {
				oldStart = l.Old
			}
			oldN++
		}
		if l.New > 0 {
			if newStart == 0 {
				newStart = l.New
			}
			newN++
		}
	}
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@", oldStart, oldN, newStart, newN)
}
