package fileeditor

import (
	"fmt"
	"os"
	"strings"

	"github.com/agentd/agentd/internal/tool"
)

// create writes a new file.
func (c *call) create(path string) tool.Result {
	if msg := c.need("file_text", c.a.FileText != nil); msg != "" {
		return c.fail(msg)
	}
	text := *c.a.FileText
	if int64(len(text)) > c.e.opts.MaxFileSize {
		return c.fail(fmt.Sprintf("file_text is %s, over the %s limit of this tool.", humanSize(int64(len(text))), humanSize(c.e.opts.MaxFileSize)))
	}
	if err := writeAtomic(path, text, 0o644); err != nil {
		return c.fail(fmt.Sprintf("Cannot create %s: %v.", path, unwrapPathError(err)))
	}
	c.e.record(path, version{existed: false})
	c.obs.NewContent = &text
	return c.ok(fmt.Sprintf("File created at %s.", path))
}

// strReplace replaces the one occurrence of old_str.
func (c *call) strReplace(path string, fi os.FileInfo) tool.Result {
	if msg := c.need("old_str", c.a.OldStr != nil); msg != "" {
		return c.fail(msg)
	}
	if msg := c.need("new_str", c.a.NewStr != nil); msg != "" {
		return c.fail(msg + " Use an empty string to delete old_str.")
	}
	oldStr, newStr := *c.a.OldStr, *c.a.NewStr
	if oldStr == newStr {
		return c.fail("No change made: new_str is the same as old_str. Give the text old_str should become.")
	}
	if oldStr == "" {
		return c.fail("No change made: old_str is empty. Give the exact text to replace, with a few lines of context.")
	}
	content, msg := c.readText(path, fi, true)
	if msg != "" {
		return c.fail(msg)
	}
	idx := allIndexes(content, oldStr)
	if len(idx) == 0 {
		// Models often add or lose whitespace at the ends of old_str; forgive that if it
		// still makes a unique match.
		if t := strings.TrimSpace(oldStr); t != "" && t != oldStr {
			if ti := allIndexes(content, t); len(ti) == 1 {
				oldStr, newStr, idx = t, strings.TrimSpace(newStr), ti
			}
		}
		if len(idx) == 1 && oldStr == newStr {
			return c.fail("No change made: apart from whitespace at its ends, new_str is the same as old_str.")
		}
	}
	switch len(idx) {
	case 0:
		return c.fail(fmt.Sprintf("No change made: old_str does not occur in %s exactly as given. It must match the file character for character, whitespace and indentation included; view the file and copy the text.", path))
	case 1:
	default:
		lines := make([]string, len(idx))
		for i, at := range idx {
			lines[i] = fmt.Sprint(lineOf(content, at))
		}
		return c.fail(fmt.Sprintf("No change made: old_str occurs %d times in %s, starting on lines %s. Include more of the surrounding lines in old_str so that it matches exactly one place.",
			len(idx), path, strings.Join(lines, ", ")))
	}
	at := idx[0]
	updated := content[:at] + newStr + content[at+len(oldStr):]
	if int64(len(updated)) > c.e.opts.MaxFileSize {
		return c.fail(fmt.Sprintf("No change made: the file would grow to %s, over the %s limit of this tool.", humanSize(int64(len(updated))), humanSize(c.e.opts.MaxFileSize)))
	}
	if err := writeAtomic(path, updated, fi.Mode().Perm()); err != nil {
		return c.fail(fmt.Sprintf("Cannot write %s: %v.", path, unwrapPathError(err)))
	}
	c.e.record(path, version{existed: true, content: content, mode: fi.Mode().Perm()})
	c.obs.OldContent, c.obs.NewContent = &content, &updated
	start := lineOf(updated, at)
	end := start + strings.Count(newStr, "\n")
	return c.ok(fmt.Sprintf("Edited %s. %s\nCheck that the change is what you meant (indentation, no duplicated or lost lines) and edit again if needed.",
		path, snippet(updated, start, end)))
}

// insert puts new_str after line insert_line.
func (c *call) insert(path string, fi os.FileInfo) tool.Result {
	if msg := c.need("insert_line", c.a.InsertLine != nil); msg != "" {
		return c.fail(msg)
	}
	if msg := c.need("new_str", c.a.NewStr != nil); msg != "" {
		return c.fail(msg)
	}
	content, msg := c.readText(path, fi, true)
	if msg != "" {
		return c.fail(msg)
	}
	lines := splitLines(content)
	at := *c.a.InsertLine
	if at < 0 || at > len(lines) {
		return c.fail(fmt.Sprintf("Invalid insert_line %d: it must be between 0 and %d, the number of lines in %s.", at, len(lines), path))
	}
	added := splitLines(*c.a.NewStr)
	if len(added) == 0 {
		added = []string{""}
	}
	out := make([]string, 0, len(lines)+len(added))
	out = append(out, lines[:at]...)
	out = append(out, added...)
	out = append(out, lines[at:]...)
	updated := strings.Join(out, "\n")
	if content == "" || strings.HasSuffix(content, "\n") {
		updated += "\n"
	}
	if int64(len(updated)) > c.e.opts.MaxFileSize {
		return c.fail(fmt.Sprintf("No change made: the file would grow to %s, over the %s limit of this tool.", humanSize(int64(len(updated))), humanSize(c.e.opts.MaxFileSize)))
	}
	if err := writeAtomic(path, updated, fi.Mode().Perm()); err != nil {
		return c.fail(fmt.Sprintf("Cannot write %s: %v.", path, unwrapPathError(err)))
	}
	c.e.record(path, version{existed: true, content: content, mode: fi.Mode().Perm()})
	c.obs.OldContent, c.obs.NewContent = &content, &updated
	return c.ok(fmt.Sprintf("Inserted %d line(s) into %s after line %d. %s\nCheck the indentation and that no line is duplicated; edit again if needed.",
		len(added), path, at, snippet(updated, at+1, at+len(added))))
}

// undo restores the state before the last recorded edit.
func (c *call) undo(path string) tool.Result {
	h := c.e.history[path]
	if len(h) == 0 {
		return c.fail(fmt.Sprintf("There is no edit of %s to undo.", path))
	}
	v := h[len(h)-1]
	var current *string
	if b, err := os.ReadFile(path); err == nil {
		s := string(b)
		current = &s
	}
	c.obs.OldContent = current
	if !v.existed {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return c.fail(fmt.Sprintf("Cannot undo the creation of %s: %v.", path, unwrapPathError(err)))
		}
		c.e.history[path] = h[:len(h)-1]
		return c.ok(fmt.Sprintf("Undid the creation of %s: the file is removed.", path))
	}
	if err := writeAtomic(path, v.content, v.mode); err != nil {
		return c.fail(fmt.Sprintf("Cannot undo the last edit of %s: %v.", path, unwrapPathError(err)))
	}
	c.e.history[path] = h[:len(h)-1]
	c.obs.NewContent = &v.content
	lines := splitLines(v.content)
	body := numbered(lines, 1)
	const clipNote = "<response clipped: view the file for the rest.>"
	return c.ok(fmt.Sprintf("Undid the last edit of %s. Its content is now:\n%s", path, clipText(body, c.e.opts.MaxViewChars, clipNote)))
}

// allIndexes returns the byte offsets of every non-overlapping occurrence of sub in s.
func allIndexes(s, sub string) []int {
	var out []int
	for off := 0; ; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + len(sub)
	}
}

// lineOf returns the 1-based line number of byte offset at.
func lineOf(s string, at int) int {
	return strings.Count(s[:at], "\n") + 1
}

// snippet shows lines start to end of content, with context around, numbered.
func snippet(content string, start, end int) string {
	lines := splitLines(content)
	from := max(1, start-snippetContext)
	to := min(len(lines), max(end, start)+snippetContext)
	if from > to {
		return "The file is now empty."
	}
	return fmt.Sprintf("Lines %d to %d now read:\n%s", from, to, numbered(lines[from-1:to], from))
}
