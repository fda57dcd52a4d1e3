package fileeditor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// binarySniff is how much of a file is searched for a NUL byte, as git and grep do.
const binarySniff = 8000

// readText reads a file the editor may show or change, or says why it may not: too big,
// binary, or (when forEdit) not UTF-8, which an edit could not write back faithfully.
func (c *call) readText(path string, fi os.FileInfo, forEdit bool) (string, string) {
	if fi.Size() > c.e.opts.MaxFileSize {
		return "", fmt.Sprintf("%s is %s, over the %s limit of this tool. Work with it in the terminal (head, sed -n 'A,Bp', grep -n).",
			path, humanSize(fi.Size()), humanSize(c.e.opts.MaxFileSize))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Sprintf("%s is not a regular file.", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Sprintf("Cannot read %s: %v.", path, unwrapPathError(err))
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		what := "a binary file"
		switch strings.ToLower(filepath.Ext(path)) {
		case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp":
			what = "an image"
		}
		return "", fmt.Sprintf("%s is %s; this tool only handles text. Inspect it in the terminal (file, xxd | head).", path, what)
	}
	if !utf8.Valid(data) {
		if forEdit {
			return "", fmt.Sprintf("%s is not UTF-8 text, so this tool cannot edit it without damaging it. Edit it in the terminal (for example with sed or iconv).", path)
		}
		return strings.ToValidUTF8(string(data), "\uFFFD"), ""
	}
	return string(data), ""
}

// writeAtomic replaces path's content without ever leaving a half-written file: it writes a
// temporary file beside the target and renames it over. A symbolic link is followed, so the
// file it points to changes and the link stays. mode applies to a new file; an existing one
// keeps its own.
func writeAtomic(path, content string, mode os.FileMode) error {
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".agentd-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.WriteString(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, mode)
	}
	if err == nil {
		err = os.Rename(name, target)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
