// Package runtimebuild finds the runtime-only build that the agentd executable carries: the
// same main package built with the agentd_runtime_only tag (no server, no LLM or Docker
// clients, no SQLite), appended after the executable by scripts/pack-runtime.sh and
// described by a fixed-size trailer at the very end of the file:
//
//	\nagentd-runtime sha256=<64 hex digits> size=<20 decimal digits>\n
//
// Sandboxes run that build: it starts in a fraction of the time of the whole binary, whose
// package initialisation alone takes milliseconds, and keeps a fraction of its memory. The
// server installs it for its local sandboxes (internal/runtime), and a kubernetes sandbox's
// init container copies it into the pod (kubernetes/podinit). The package holds nothing
// else, so that the init step does not link the runtime's server.
package runtimebuild

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// trailerLen is the length of the trailer, which scripts/pack-runtime.sh writes.
const trailerLen = len("\nagentd-runtime sha256=") + 64 + len(" size=") + 20 + len("\n")

// ErrNotPacked: the executable carries no runtime build (a plain `go build`, or the
// runtime-only build itself).
var ErrNotPacked = errors.New("no runtime build is packed into this executable")

// Locate finds the runtime build inside the executable file f: its offset, its size and the
// hex SHA-256 of its bytes, which a reader should check. It returns ErrNotPacked when f
// carries none.
func Locate(f *os.File) (offset, size int64, sum string, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, "", err
	}
	if fi.Size() < int64(trailerLen) {
		return 0, 0, "", ErrNotPacked
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
		return 0, 0, "", ErrNotPacked
	}
	size, err = strconv.ParseInt(string(m[2]), 10, 64)
	if err != nil || size <= 0 || size > fi.Size()-int64(trailerLen) {
		return 0, 0, "", fmt.Errorf("the runtime trailer of %s gives a size of %s bytes, which the file cannot hold", f.Name(), m[2])
	}
	return fi.Size() - int64(trailerLen) - size, size, string(m[1]), nil
}
