package hostproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveAll removes path, also where a command took away the write permission of a directory
// inside it. A path that does not exist is not an error.
func RemoveAll(path string) error {
	err := os.RemoveAll(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}
