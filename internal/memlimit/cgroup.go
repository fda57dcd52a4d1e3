package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AutoShare is the share, in percent, of its cgroup's memory limit that a process asking for
// an automatic limit keeps its resident memory under. The rest is headroom for what the
// kernel charges to the cgroup beside the process's resident set (the page cache of the files
// it writes, its kernel memory) and for what the process takes between two readings.
const AutoShare = 90

// FromCgroup returns AutoShare percent of the memory limit of the cgroup this process is in,
// as /proc/self/cgroup and the cgroup file system under /sys/fs/cgroup give it (cgroup v2's
// memory.max, or v1's memory.limit_in_bytes), and the limit itself. Both are 0 when the
// cgroup sets none, or when there is no cgroup file system to read.
func FromCgroup() (limit, cgroup int64, err error) {
	return fromCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
}

func fromCgroup(procFile, root string) (limit, cgroup int64, err error) {
	f, err := os.Open(procFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read the process's cgroup: %w", err)
	}
	defer f.Close()
	// Lines are "id:controllers:path": "0::/path" for v2, "N:memory:/path" for v1's memory
	// hierarchy (others may share it: "N:cpu,memory:/path").
	var files []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, filepath.Join(root, parts[2], "memory.max"),
				filepath.Join(root, "unified", parts[2], "memory.max"))
		case contains(strings.Split(parts[1], ","), "memory"):
			files = append([]string{filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes")}, files...)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read the process's cgroup: %w", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read the cgroup's memory limit: %w", err)
		}
		v := strings.TrimSpace(string(data))
		if v == "max" {
			return 0, 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read the cgroup's memory limit %s: %q", file, v)
		}
		// cgroup v1 writes a huge number (the largest page-aligned value) for none.
		if n <= 0 || n >= 1<<62 {
			return 0, 0, nil
		}
		return n / 100 * AutoShare, n, nil
	}
	return 0, 0, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
