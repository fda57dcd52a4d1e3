package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimebuild"
)

// The agentd binary carries a runtime-only build of itself, which sandboxes run
// (runtimebuild says how it is packed and why).

// BinaryPrefix starts the name of every runtime binary InstallBinary writes; the rest is
// its hash.
const BinaryPrefix = "agentd-runtime-"

// tempPrefix starts the name of a runtime build being written.
const tempPrefix = ".agentd-runtime-"

// ErrNoPackedRuntime: the executable carries no runtime build (a plain `go build`).
var ErrNoPackedRuntime = runtimebuild.ErrNotPacked

// InstallBinary writes the runtime build packed into the executable exe to dir (created if
// missing) as BinaryPrefix+<hash>, read-only and executable, and returns its path. A file of
// that name is reused when it holds the right bytes. It returns ErrNoPackedRuntime when exe
// carries none: sandboxes then run exe itself.
func InstallBinary(exe, dir string) (string, error) {
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("install runtime: %w", err)
	}
	defer f.Close()
	off, size, sum, err := runtimebuild.Locate(f)
	if err != nil {
		if errors.Is(err, ErrNoPackedRuntime) {
			return "", err
		}
		return "", fmt.Errorf("install runtime: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install runtime: %w", err)
	}
	path := filepath.Join(dir, BinaryPrefix+sum[:16])
	if fileSum(path) != sum {
		if err := writeBinary(io.NewSectionReader(f, off, size), path, sum); err != nil {
			return "", fmt.Errorf("install runtime from %s: %w", exe, err)
		}
	}
	return path, nil
}

// writeBinary copies r to path through a temporary file in the same directory, checking
// that its hash is sum, so that path never holds a partial or wrong binary.
func writeBinary(r io.Reader, path, sum string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), r)
	if err == nil && hex.EncodeToString(h.Sum(nil)) != sum {
		err = errors.New("the packed runtime does not match its hash: the executable is damaged")
	}
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// fileSum is the SHA-256 of the file at path in hex, or "" when it cannot be read.
func fileSum(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RemoveOtherBinaries removes the runtime builds in dir other than keep: those of earlier
// versions. Sandboxes running one keep it open, so only a server that holds the data
// directory's lock may call it (another server may have just installed its own). A failure
// only leaves a file behind.
func RemoveOtherBinaries(dir, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p != keep && (strings.HasPrefix(e.Name(), BinaryPrefix) || strings.HasPrefix(e.Name(), tempPrefix)) {
			os.Remove(p)
		}
	}
}
