package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps named network namespaces.
const netnsDir = "/run/netns"

// addNetns creates the named network namespace with loopback up and NodeIP on it.
func addNetns(name string) error {
	for _, args := range [][]string{
		{"netns", "add", name},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "addr", "add", NodeIP + "/32", "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// deleteNetns deletes the named network namespace if it exists.
func deleteNetns(name string) error {
	if _, err := os.Lstat(filepath.Join(netnsDir, name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// openNetns opens the named network namespace for setns.
func openNetns(name string) (int, error) {
	fd, err := unix.Open(netnsPath(name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open network namespace %s: %w", name, err)
	}
	return fd, nil
}

func closeFD(fd int) error { return unix.Close(fd) }
