package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readSecret reads one line from r; when r is a terminal, what is typed is not echoed.
func readSecret(r io.Reader, w io.Writer) (string, error) {
	f, ok := r.(*os.File)
	if !ok {
		return readLine(r)
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return readLine(r) // not a terminal
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return readLine(r)
	}
	defer func() {
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
		io.WriteString(w, "\n")
	}()
	return readLine(r)
}
