package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The agentd binary carries a runtime-only build of itself (the same main package built with
// the agentd_runtime_only tag: no server, no LLM or Docker clients, no SQLite), appended after
// the executable by scripts/pack-runtime.sh and described by a fixed-size trailer at the very
// end of the file:
//
//	\nagentd-runtime sha256=<64 hex digits> size=<20 decimal digits>\n
//
// Sandboxes run that build: it starts in a fraction of the time of the whole binary, whose
// package initialisation alone takes milliseconds, and keeps a fraction of its memory.

// trailerLen is the length of the trailer, which scripts/pack-runtime.sh writes.
const trailerLen = len("\nagentd-runtime sha256=") + 64 + len(" size=") + 20 + len("\n")

// BinaryPrefix starts the name of every runtime binary InstallBinary writes; the rest is
// its hash.
const BinaryPrefix = "agentd-runtime-"

// tempPrefix starts the name of a runtime build being written.
const tempPrefix = ".agentd-runtime-"

// ErrNoPackedRuntime: the executable carries no runtime build (a plain `go build`).
var ErrNoPackedRuntime = errors.New("no runtime build is packed into this executable")

// packed locates the runtime build inside the executable file f: its offset, size and hash.
func packed(f *os.File) (offset, size int64, sum string, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, "", err
	}
	if fi.Size() < int64(trailerLen) {
		return 0, 0, "", ErrNoPackedRuntime
	}
	buf := make([]byte, trailerLen)
	if _, err := f.ReadAt(buf, fi.Size()-int64(trailerLen)); err != nil {
		return 0, 0, "", err
	}
	// Compiled here rather than at package initialisation, which every runtime start pays.
	m := regexp.MustCompile(`^\nagentd-runtime sha256=([0-9a-f]{64}) size=([0-9]{20})\n$`).FindSubmatch(buf)
	if m == nil {
		if bytes.Contains(buf, []byte("agentd-runtime")) {
			return 0, 0, "", fmt.Errorf("the runtime trailer at the end of %s is malformed", f.Name())
		}
		return 0, 0, "", ErrNoPackedRuntime
	}
	size, err = strconv.ParseInt(string(m[2]), 10, 64)
	if err != nil || size <= 0 || size > fi.Size()-int64(trailerLen) {
		return 0, 0, "", fmt.Errorf("the runtime trailer of %s gives a size of %s bytes, which the file cannot hold", f.Name(), m[2])
	}
	return fi.Size() - int64(trailerLen) - size, size, string(m[1]), nil
}

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
	off, size, sum, err := packed(f)
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
