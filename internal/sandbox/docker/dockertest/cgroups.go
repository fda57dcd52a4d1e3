package dockertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupDirs returns the directories of cgroup rel, a relative cgroup parent as dockerd's
// --cgroup-parent takes it, that exist in any hierarchy mounted under /sys/fs/cgroup. Docker
// reads such a parent relative to its own cgroup in each hierarchy, which is this process's
// (dockerd is its child) and is not the root of every hierarchy: a test run from a service
// or a container sits below the root in some, such as memory.
func cgroupDirs(rel string) []string {
	bases := map[string]bool{"/": true}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(b)) {
			// hierarchy-ID:controllers:path
			if f := strings.SplitN(strings.TrimSpace(line), ":", 3); len(f) == 3 {
				bases[f[2]] = true
			}
		}
	}
	mounts, _ := filepath.Glob("/sys/fs/cgroup/*")
	mounts = append(mounts, "/sys/fs/cgroup")
	var dirs []string
	seen := map[string]bool{}
	for _, m := range mounts {
		for base := range bases {
			dir := filepath.Join(m, base, rel)
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() && !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs
}

// removeCgroups removes the cgroup parent (and any empty child left in it) from every
// hierarchy.
func removeCgroups(parent string) error {
	if parent == "" {
		return nil
	}
	var errs []error
	for _, d := range cgroupDirs(parent) {
		children, _ := os.ReadDir(d)
		for _, c := range children {
			if c.IsDir() {
				if err := unix.Rmdir(filepath.Join(d, c.Name())); err != nil {
					errs = append(errs, fmt.Errorf("remove cgroup %s/%s: %w", d, c.Name(), err))
				}
			}
		}
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
