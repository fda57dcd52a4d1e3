package kubetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What a cluster holds on the machine outside its directory and network namespace, and how
// to take it back.

// cgroupMounts returns the mount points of the cgroup hierarchies: one per v1 hierarchy and
// the v2 one, wherever they are mounted.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if !ok || len(fields) < 5 {
			continue
		}
		if fstype := strings.Fields(post); len(fstype) > 0 && (fstype[0] == "cgroup" || fstype[0] == "cgroup2") {
			mounts = append(mounts, fields[4])
		}
	}
	return mounts, sc.Err()
}

// createCgroupRoot creates the cgroup the kubelet puts the pods' cgroups under (its
// cgroupRoot, which must exist) in every hierarchy. A new cpuset cgroup has no CPUs and no
// memory nodes; it gets its parent's.
func createCgroupRoot(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
		}
	}
	return nil
}

// cgroupRoots returns the directories of the cgroup name in every hierarchy that has it.
func cgroupRoots(name string) []string {
	mounts, _ := cgroupMounts()
	var dirs []string
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// removeCgroupTree kills every process in the cgroup name and below, in every hierarchy,
// and removes the cgroups, deepest first. The processes are the pods' containers: they
// outlive the kubelet and containerd, and their shims once those are killed.
func removeCgroupTree(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var dirs []string
		for _, root := range cgroupRoots(name) {
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
		}
		if len(dirs) == 0 {
			return nil
		}
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		var errs []error
		for _, d := range dirs {
			for _, pid := range cgroupPIDs(d) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		// The killed processes take a moment to leave their cgroups.
		time.Sleep(50 * time.Millisecond)
	}
}

func cgroupPIDs(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNaming kills every process whose command line contains s (the cluster's directory:
// its components and containerd's shims all name it) and waits for them to end.
func killNaming(s string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := processesNaming(s)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes naming %s survive SIGKILL: %v", s, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func processesNaming(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		// A zombie keeps its command line until its parent reaps it; it is dead already.
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// kubeletSysctls are the kernel settings the kubelet changes at start (its container
// manager's setupKernelTunables). They are not per network namespace: Close puts them back.
var kubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// saveSysctls records the kubelet's kernel settings as they are in path.
func saveSysctls(path string) error {
	saved := map[string]string{}
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return err
		}
		saved[k] = strings.TrimSpace(string(v))
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// restoreSysctls puts back the settings saveSysctls recorded in path, if it did.
func restoreSysctls(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var saved map[string]string
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for _, k := range kubeletSysctls {
		if v, ok := saved[k]; ok {
			if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Files the kubelet, containerd and the CNI plugins write outside the cluster's directory
// whatever their configuration says.
const (
	// containerLogLinks is where the kubelet links each container's log (under podLogsDir)
	// as <pod>_<namespace>_<container>-<id>.log.
	containerLogLinks = "/var/log/containers"
	// cniResults is where libcni caches each attachment's result, as <network>-<id>-<if>,
	// the pod's network namespace in it.
	cniResults = "/var/lib/cni/results"
	// shimSockets is where containerd 1.6's shims listen, one socket each.
	shimSockets = "/run/containerd/s"
	// devicePluginSocket is where the kubelet listens for device plugins, whatever its root
	// directory (k8s.io/kubelet's DevicePluginPath), beside the checkpoint of the devices it
	// gave out.
	devicePluginSocket     = "/var/lib/kubelet/device-plugins/kubelet.sock"
	devicePluginCheckpoint = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
)

// removeHostFiles removes what the cluster with directory dir left in the machine's own
// directories: the kubelet's log links into dir, libcni's cached results of the pods'
// attachments (their namespaces are under dir), and its shims' sockets.
func removeHostFiles(dir string, shimSocks []string) error {
	errs := []error{removeHostFilesNaming(dir + "/")}
	for _, sock := range shimSocks {
		errs = append(errs, removeIfExists(sock))
	}
	// No kubelet of this cluster runs any more: a socket nobody answers on is its.
	if conn, err := net.Dial("unix", devicePluginSocket); err == nil {
		conn.Close()
	} else if errors.Is(err, unix.ECONNREFUSED) {
		errs = append(errs, removeIfExists(devicePluginSocket), removeIfExists(devicePluginCheckpoint))
	}
	// The hostPath volumes the controller manager provisioned: the claims of a cluster
	// that was killed, or closed with claims left, leave theirs.
	errs = append(errs, os.RemoveAll(hostPathPVDir))
	// The directories themselves go too once empty; other users of them make them again
	// when they need them.
	for _, d := range hostDirs {
		_ = unix.Rmdir(d)
	}
	return errors.Join(errs...)
}

// hostDirs are the machine's directories the kubelet, libcni and containerd make, deepest
// first.
var hostDirs = []string{
	containerLogLinks,
	cniResults, filepath.Dir(cniResults),
	shimSockets, filepath.Dir(shimSockets),
	filepath.Dir(devicePluginSocket), filepath.Dir(filepath.Dir(devicePluginSocket)),
}

// shimSocketsOf returns the sockets of the cluster's shims, which each shim names in the
// address file of its bundle under dir. A shim that ends by itself removes its socket, one
// that is killed does not; and a task's deletion removes its bundle, and the shim may still
// be ending then: Close reads them before it deletes the tasks.
func shimSocketsOf(dir string) []string {
	addrs, _ := filepath.Glob(filepath.Join(dir, "containerd/state/io.containerd.runtime.v2.task/*/*/address"))
	var socks []string
	for _, a := range addrs {
		b, err := os.ReadFile(a)
		if err != nil {
			continue
		}
		sock := strings.TrimPrefix(strings.TrimSpace(string(b)), "unix://")
		if filepath.Dir(sock) == shimSockets && !slices.Contains(socks, sock) {
			socks = append(socks, sock)
		}
	}
	return socks
}

// removeHostFilesNaming removes the kubelet's log links whose target contains s and
// libcni's cached results that contain s.
func removeHostFilesNaming(s string) error {
	var errs []error
	links, _ := os.ReadDir(containerLogLinks)
	for _, e := range links {
		p := filepath.Join(containerLogLinks, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.Contains(target, s) {
			errs = append(errs, removeIfExists(p))
		}
	}
	results, _ := os.ReadDir(cniResults)
	for _, e := range results {
		p := filepath.Join(cniResults, e.Name())
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			errs = append(errs, removeIfExists(p))
		}
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
