package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Close stops the cluster and removes all it made: its processes and containers, their
// mounts, the network namespaces, the cgroups, the files in and outside Dir; and it puts
// back the kernel settings the kubelet changed. It then lets the next cluster start. Safe
// to call twice; the second call returns the first's error.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closed, c.closeErr = true, c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	var errs []error
	byName := map[string]*process{}
	for _, p := range c.procs {
		byName[p.name] = p
	}
	// The kubelet and the control plane first, so that nothing starts containers again.
	for _, name := range []string{"kubelet", "kube-scheduler", "kube-controller-manager", "kube-apiserver"} {
		if p := byName[name]; p != nil {
			errs = append(errs, p.stop(stopTimeout))
		}
	}
	// The containers through containerd, so that each shim ends and removes its socket.
	shimSocks := shimSocketsOf(c.Dir)
	if p := byName["containerd"]; p != nil && p.exitError() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		errs = append(errs, c.deleteTasks(ctx))
		cancel()
	}
	for _, name := range []string{"containerd", "etcd"} {
		if p := byName[name]; p != nil {
			errs = append(errs, p.stop(stopTimeout))
		}
	}
	c.mu.Lock()
	if c.netnsFD >= 0 {
		errs = append(errs, closeFD(c.netnsFD))
		c.netnsFD = -1
	}
	c.mu.Unlock()
	errs = append(errs, removeCluster(c.Dir, shimSocks))
	c.lock.unlock()
	return errors.Join(errs...)
}

// stopTimeout bounds each step of Close.
const stopTimeout = 30 * time.Second

// deleteTasks kills and deletes every container task of the node.
func (c *Cluster) deleteTasks(ctx context.Context) error {
	ids, err := c.tasks(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	// Some may go by themselves meanwhile (ctr then fails on them): what counts is what is
	// left after.
	_, _ = c.ctr(ctx, append([]string{"tasks", "delete", "--force"}, ids...)...)
	left, err := c.tasks(ctx)
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("containerd tasks left after delete: %v", left)
	}
	return err
}

func (c *Cluster) tasks(ctx context.Context) ([]string, error) {
	out, err := c.ctr(ctx, "tasks", "list", "--quiet")
	return strings.Fields(out), err
}

// removeCluster removes what the cluster with directory dir holds on the machine, whether
// its test process closed it or died: the processes that name dir (its components and
// containerd's shims), the containers in its cgroups and the cgroups, the mounts under dir,
// its network namespace (the pods' are mounts under dir), its files outside dir (the shim
// sockets given and those its shims still name), the kernel settings the kubelet changed,
// and dir.
func removeCluster(dir string, shimSocks []string) error {
	name := filepath.Base(dir)
	shimSocks = append(shimSocks, shimSocketsOf(dir)...)
	errs := []error{
		killNaming(dir+"/", stopTimeout),
		removeCgroupTree(name, stopTimeout),
		unmountUnder(dir),
		deleteNetns(name),
		removeHostFiles(dir, shimSocks),
		restoreSysctls(filepath.Join(dir, "sysctl.json")),
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeStale removes every cluster left on the machine: its directory, network namespace
// or cgroup, whichever remains. Called with the machine's lock held, so none is running.
func removeStale() error {
	names := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		names[filepath.Base(d)] = true
	}
	nss, _ := os.ReadDir(netnsDir)
	for _, e := range nss {
		if strings.HasPrefix(e.Name(), dirPrefix) {
			names[e.Name()] = true
		}
	}
	mounts, _ := cgroupMounts()
	for _, m := range mounts {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), dirPrefix) {
				names[e.Name()] = true
			}
		}
	}
	// A component whose directory is gone still names it, and so do files.
	prefix := filepath.Join(os.TempDir(), dirPrefix)
	errs := []error{killNaming(prefix, stopTimeout)}
	for name := range names {
		errs = append(errs, removeCluster(filepath.Join(os.TempDir(), name), nil))
	}
	errs = append(errs, removeHostFilesNaming(prefix))
	return errors.Join(errs...)
}
