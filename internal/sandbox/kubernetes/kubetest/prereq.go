package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// binaries are what scripts/kube-build.sh puts in the bin directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "pause"}

// checkPrerequisites returns an error wrapping ErrUnavailable that lists what this machine
// lacks to run a cluster, or nil.
func checkPrerequisites(binDir string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (the cluster makes network namespaces, cgroups and mounts)")
	}
	var pkgs []string
	for cmd, pkg := range map[string]string{
		"containerd": "containerd",
		"ctr":        "containerd",
		"runc":       "runc",
		"nsenter":    "util-linux",
		"ip":         "iproute2",
	} {
		if _, err := lookPath(cmd); err != nil && !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil && !slices.Contains(pkgs, "containernetworking-plugins") {
			pkgs = append(pkgs, "containernetworking-plugins")
		}
	}
	if static, err := isStatic(busyboxPath); err != nil || !static {
		pkgs = append(pkgs, "busybox-static")
	}
	if len(pkgs) > 0 {
		missing = append(missing, "the Debian packages "+strings.Join(pkgs, ", ")+" (scripts/deps.sh installs them)")
	}
	for _, b := range binaries {
		if unix.Access(filepath.Join(binDir, b), unix.X_OK) != nil {
			missing = append(missing, fmt.Sprintf("the Kubernetes %s binaries in %s (make kube builds them: 6 to 17 minutes the first time)", Version, binDir))
			break
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: this machine lacks %s", ErrUnavailable, strings.Join(missing, "; "))
	}
	return nil
}

// lookPath finds cmd in PATH or in the sbin directories a non-root PATH may lack.
func lookPath(cmd string) (string, error) {
	if p, err := exec.LookPath(cmd); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, cmd); unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", cmd)
}
