package fileeditor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/tool"
)

// viewFile shows a file, or the lines of view_range, numbered.
func (c *call) viewFile(path string, fi os.FileInfo) tool.Result {
	content, msg := c.readText(path, fi, false)
	if msg != "" {
		return c.fail(msg)
	}
	lines := splitLines(content)
	first, last := 1, len(lines)
	var note string
	if r := c.a.ViewRange; r != nil {
		start, end := r[0], r[1]
		n := len(lines)
		switch {
		case n == 0:
			return c.fail(fmt.Sprintf("Invalid view_range %v: %s is empty.", r, path))
		case start < 1 || start > n:
			return c.fail(fmt.Sprintf("Invalid view_range %v: the first line must be between 1 and %d, the number of lines in %s.", r, n, path))
		case end != -1 && end < start:
			return c.fail(fmt.Sprintf("Invalid view_range %v: the last line must be at least the first line, or -1 for the end of the file.", r))
		case end > n:
			note = fmt.Sprintf("NOTE: %s has %d lines, so lines %d to %d are shown.\n", path, n, start, n)
			end = n
		case end == -1:
			end = n
		}
		first, last = start, end
	}
	header := fmt.Sprintf("Contents of %s with line numbers (as cat -n prints them):\n", path)
	if len(lines) == 0 {
		return c.ok(fmt.Sprintf("%s is empty.", path))
	}
	body := numbered(lines[first-1:last], first)
	const clipNote = "<response clipped: the rest of the file is not shown. View a smaller view_range, or find the lines you need with grep -n in the terminal.>"
	return c.ok(note + header + clipText(body, c.e.opts.MaxViewChars, clipNote))
}

// viewDir lists a directory two levels deep, leaving out hidden entries.
func (c *call) viewDir(path string) tool.Result {
	if c.a.ViewRange != nil {
		return c.fail(fmt.Sprintf("view_range only applies to files, and %s is a directory.", path))
	}
	var b strings.Builder
	hidden := 0
	fmt.Fprintf(&b, "Files and directories up to 2 levels deep in %s, hidden items left out:\n%s/\n", path, strings.TrimSuffix(path, "/"))
	entries, err := os.ReadDir(path)
	if err != nil {
		return c.fail(fmt.Sprintf("Cannot list %s: %v.", path, unwrapPathError(err)))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			hidden++
			continue
		}
		p := filepath.Join(path, e.Name())
		if !isDir(p, e) {
			b.WriteString(p + "\n")
			continue
		}
		b.WriteString(p + "/\n")
		sub, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, s := range sub {
			if strings.HasPrefix(s.Name(), ".") {
				hidden++
				continue
			}
			sp := filepath.Join(p, s.Name())
			if isDir(sp, s) {
				sp += "/"
			}
			b.WriteString(sp + "\n")
		}
	}
	text := b.String()
	if hidden > 0 {
		text += fmt.Sprintf("\n%d hidden item(s) left out; list them with ls -la %s in the terminal.\n", hidden, path)
	}
	const clipNote = "<response clipped: the listing is too long. View a subdirectory, or list it with ls or find in the terminal.>"
	return c.ok(clipText(text, c.e.opts.MaxViewChars, clipNote))
}

// isDir reports whether an entry is a directory, following a symbolic link.
func isDir(path string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink != 0 {
		fi, err := os.Stat(path)
		return err == nil && fi.IsDir()
	}
	return false
}

// clipText keeps the start of text within max characters, cut at a line end, and appends
// note when it cuts.
func clipText(text string, maxChars int, note string) string {
	if len([]rune(text)) <= maxChars {
		return text
	}
	r := []rune(text)
	cut := string(r[:max(maxChars-len(note)-1, 0)])
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i+1]
	}
	return cut + note
}
