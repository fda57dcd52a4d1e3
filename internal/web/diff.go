package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// A file's change shown to people: the lines that changed with a few around them, in hunks,
// as a unified diff reads, each line with its numbers before and after.

const (
	// diffContext is how many unchanged lines are shown around a change.
	diffContext = 3
	// maxDiffLines bounds the lines a diff shows; the rest is summarised in one line.
	maxDiffLines = 2000
	// diffTimeout bounds the work of one diff: past it, the diff found so far (correct but
	// maybe longer than the shortest) is shown.
	diffTimeout = 2 * time.Second
)

// diffLine is one line of a hunk. Op is '+', '-' or ' '; a number is 0 where the line does
// not exist on that side.
type diffLine struct {
	Op          string
	Old, New    int
	Text        string
	Added, Gone bool
}

// hunk is a run of changed lines with their context.
type hunk struct {
	Header string
	Lines  []diffLine
}

// diffView is the change of one file.
type diffView struct {
	Path           string
	Hunks          []hunk
	Added, Removed int
	// Omitted counts the lines left out past maxDiffLines.
	Omitted int
	// Created and Deleted say the file is new or gone; Same that nothing changed.
	Created, Deleted, Same bool
	// Binary says the file is not text.
	Binary bool
	// ShowPath names the file in the diff's caption (an edit's card names it already).
	ShowPath bool
}

// lineDiff compares two texts line by line.
func lineDiff(path, before, after string) diffView {
	v := diffView{Path: path, Same: before == after}
	if v.Same {
		return v
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = diffTimeout
	a, b, lines := dmp.DiffLinesToRunes(before, after)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines)

	// Flatten into lines with their numbers.
	var all []diffLine
	oldNo, newNo := 1, 1
	for _, d := range diffs {
		for _, text := range splitLines(d.Text) {
			l := diffLine{Text: text}
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				l.Op, l.Old, l.New = " ", oldNo, newNo
				oldNo++
				newNo++
			case diffmatchpatch.DiffDelete:
				l.Op, l.Old, l.Gone = "-", oldNo, true
				oldNo++
				v.Removed++
			case diffmatchpatch.DiffInsert:
				l.Op, l.New, l.Added = "+", newNo, true
				newNo++
				v.Added++
			}
			all = append(all, l)
		}
	}
	v.Hunks, v.Omitted = hunks(all)
	return v
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

// hunks groups the changed lines with diffContext lines around them, at most maxDiffLines
// in all.
func hunks(all []diffLine) ([]hunk, int) {
	var out []hunk
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
		start := max(0, i-diffContext)
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
			if run == len(all) || run-end > 2*diffContext {
				end = min(len(all), end+diffContext)
				break
			}
			end = run
		}
		lines := all[start:end]
		if shown+len(lines) > maxDiffLines {
			keep := max(0, maxDiffLines-shown)
			omitted += len(lines) - keep
			for _, l := range all[end:] {
				if l.Op != " " {
					omitted++
				}
			}
			lines = lines[:keep]
			if len(lines) > 0 {
				out = append(out, hunk{Header: hunkHeader(lines), Lines: lines})
			}
			return out, omitted
		}
		shown += len(lines)
		out = append(out, hunk{Header: hunkHeader(lines), Lines: lines})
		i = end
	}
	return out, omitted
}

// hunkHeader is a hunk's @@ line.
func hunkHeader(lines []diffLine) string {
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
