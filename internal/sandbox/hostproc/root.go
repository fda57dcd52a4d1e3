package hostproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/sandbox"
)

// MaxSocketPath is the longest path a unix socket address holds (sun_path less its NUL).
const MaxSocketPath = 107

// idLen is the length of the sandbox ids the sandbox service hands out.
const idLen = 32

// Root is the host directory in which a backend keeps one directory per sandbox, with the
// runtime's unix socket at the same name in each.
type Root struct {
	// Path is absolute.
	Path   string
	socket string
}

// NewRoot makes path absolute and refuses it when the sockets of sandboxes under it would
// not fit a unix socket address: at start-up, rather than at every sandbox start. socket is
// the socket's path within a sandbox directory. NewRoot creates nothing.
func NewRoot(path, socket string) (Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Root{}, err
	}
	r := Root{Path: abs, socket: socket}
	if n := len(r.socketOf(filepath.Join(abs, strings.Repeat("0", idLen)))); n > MaxSocketPath {
		return Root{}, fmt.Errorf("the sandbox socket paths under %s would be %d bytes, more than the %d a unix socket allows: choose a shorter data directory", abs, n, MaxSocketPath)
	}
	return r, nil
}

// Dir returns the directory of sandbox id. The id must be a single path element (it ends up
// in RemoveAll) whose socket path fits a unix socket address.
func (r Root) Dir(id string) (string, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return "", fmt.Errorf("sandbox id %q is not a valid path element", id)
	}
	dir := filepath.Join(r.Path, id)
	if n := len(r.socketOf(dir)); n > MaxSocketPath {
		return "", fmt.Errorf("sandbox %s: socket path is %d bytes, more than %d; use a shorter root", id, n, MaxSocketPath)
	}
	return dir, nil
}

// Create makes the directory of sandbox id (mode 0700) and returns it. A directory that
// exists already is an error, never taken over: this start did not make it, so nothing of
// this start may remove it.
func (r Root) Create(id string) (string, error) {
	dir, err := r.Dir(id)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("create directory: %w", err)
	}
	return dir, nil
}

func (r Root) socketOf(dir string) string { return filepath.Join(dir, r.socket) }

// Check is the part of sandbox.Checker every backend on a host directory shares: the root
// takes new files (a full or read-only disk, a directory removed or made unwritable stop
// every start) and the agentd binary the sandboxes run is there.
func (r Root) Check(backend, binary string) error {
	if err := r.checkWritable(); err != nil {
		return &sandbox.CheckError{Backend: backend, Problem: "the sandbox directory is not writable", Err: err}
	}
	if err := CheckExecutable(binary); err != nil {
		return &sandbox.CheckError{Backend: backend, Problem: "the agentd binary the sandboxes run is missing", Err: err}
	}
	return nil
}

// checkWritable creates and removes a file in the root.
func (r Root) checkWritable() error {
	f, err := os.CreateTemp(r.Path, ".check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

// CheckExecutable reports whether path is a regular file someone may execute.
func CheckExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
