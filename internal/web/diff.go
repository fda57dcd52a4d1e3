package web

import (
	"github.com/agentd/agentd/internal/textdiff"
)

// A file's change shown to people: the lines that changed with a few around them, in hunks,
// as a unified diff reads, each line with its numbers before and after (internal/textdiff).

// maxDiffLines bounds the lines a diff shows; the rest is summarised in one line.
const maxDiffLines = 2000

// diffView is the change of one file.
type diffView struct {
	Path string
	textdiff.Diff
	// Created and Deleted say the file is new or gone; Same that nothing changed.
	Created, Deleted, Same bool
	// Binary says the file is not text.
	Binary bool
	// ShowPath names the file in the diff's caption (an edit's card names it already).
	ShowPath bool
}

// lineDiff compares two texts line by line.
func lineDiff(path, before, after string) diffView {
	return diffView{Path: path, Same: before == after, Diff: textdiff.Compare(before, after, maxDiffLines)}
}
