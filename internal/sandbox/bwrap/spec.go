package bwrap

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/cgroup"
)

// CheckSpec implements sandbox.SpecChecker.
func (b *Backend) CheckSpec(spec sandbox.Spec) error { return b.checkSpec(spec) }

// checkSpec rejects what this backend cannot do on this machine, naming all of it at once.
func (b *Backend) checkSpec(spec sandbox.Spec) error {
	var missing []string
	switch sandbox.NetworkOf(spec) {
	case sandbox.NetworkHost, sandbox.NetworkNone:
	case sandbox.NetworkEgress:
		if b.egressErr != nil {
			missing = append(missing, fmt.Sprintf("network egress (%v)", b.egressErr))
		}
	default:
		return fmt.Errorf("unknown network policy %q", spec.Network)
	}
	lim := spec.Limits
	if lim.MemoryBytes < 0 || lim.CPUs < 0 || lim.PIDs < 0 || lim.DiskBytes < 0 {
		return fmt.Errorf("negative resource limit in %+v", lim)
	}
	for _, c := range b.cg.Missing(cgroupLimits(lim)) {
		missing = append(missing, fmt.Sprintf("a %s limit (this machine mounts no %s cgroup controller)", c, c))
	}
	if lim.DiskBytes > 0 {
		missing = append(missing, "a disk limit (the workspace is a host directory without a quota)")
	}
	if spec.Image != "" {
		missing = append(missing, "an image (it runs a rootfs directory or the host's system directories)")
	}
	if spec.Rootfs != "" {
		if why := checkRootfs(spec.Rootfs); why != "" {
			missing = append(missing, fmt.Sprintf("rootfs %s (%s)", spec.Rootfs, why))
		}
	}
	if why := checkWorkspace(workspaceOf(spec), spec.Rootfs); why != "" {
		missing = append(missing, fmt.Sprintf("working directory %s (%s)", workspaceOf(spec), why))
	}
	if len(missing) > 0 {
		return &sandbox.UnsupportedError{Backend: Name, What: missing}
	}
	return nil
}

func cgroupLimits(l sandbox.Limits) cgroup.Limits {
	return cgroup.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, PIDs: l.PIDs}
}

// workspaceOf is the workspace path inside sandboxes of spec.
func workspaceOf(spec sandbox.Spec) string {
	if spec.WorkingDir == "" {
		return DefaultWorkspace
	}
	return spec.WorkingDir
}

// checkRootfs says what is wrong with a rootfs directory, or "".
func checkRootfs(rootfs string) string {
	if !filepath.IsAbs(rootfs) {
		return "not an absolute path"
	}
	if fi, err := os.Stat(rootfs); err != nil || !fi.IsDir() {
		return "not a directory"
	}
	// The runtime runs commands with bash, or /bin/sh where there is none.
	for _, sh := range []string{"bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash"} {
		if _, err := os.Stat(filepath.Join(rootfs, sh)); err == nil {
			return ""
		}
	}
	return "it has no /bin/sh to run commands with"
}

// checkWorkspace says why ws cannot be a sandbox's workspace, or "". bwrap creates the mount
// point of the workspace, which it can on the sandbox's own tmpfs root but not inside a
// read-only system directory: there, the directory must exist already.
func checkWorkspace(ws, rootfs string) string {
	if !path.IsAbs(ws) || path.Clean(ws) != ws || ws == "/" {
		return "not a clean absolute path below /"
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(ws, "/"), "/")
	for _, r := range reserved {
		if top == r && r != "tmp" {
			return "/" + r + " belongs to the sandbox's own mounts"
		}
	}
	src := ws // where the workspace's top directory comes from, on the host
	if rootfs != "" {
		src = filepath.Join(rootfs, ws)
		if _, err := os.Lstat(filepath.Join(rootfs, top)); err != nil {
			return "" // not in the rootfs: made on the tmpfs root
		}
	} else if !isSystemTop(top) {
		return ""
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return "it is inside a read-only system directory and does not exist there"
	}
	return ""
}

// isSystemTop reports whether /name is mounted from the host in a sandbox without a rootfs.
func isSystemTop(name string) bool {
	for _, d := range systemDirs {
		if d == "/"+name {
			_, err := os.Lstat(d)
			return err == nil
		}
	}
	return false
}
