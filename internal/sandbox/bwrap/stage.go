package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// bwrap runs as the unprivileged sandbox uid, and an unprivileged bwrap can bind only what
// that uid may reach by path: not the workspace or the binary inside agentd's private data
// directory (or a test binary in Go's private build directory). Rather than open those
// directories to the uid, the sandbox's first process starts in a mount namespace of its own
// in which agentd has bound them below stageDir, on a tmpfs the uid may search. The
// namespace is private: the host sees none of these mounts, and they go with the sandbox's
// processes, leaving nothing to clean up.
const stageDir = "/dev/shm"

// Paths below stageDir, in the staging namespace.
var (
	stagedWorkspace = filepath.Join(stageDir, "workspace")
	stagedBinary    = filepath.Join(stageDir, "agentd")
	stagedRootfs    = filepath.Join(stageDir, "rootfs")
)

// stage says what to bind below stageDir; empty fields are left out. With tun, the namespace
// gets a tun device node of its own that every uid may open (see startSlirp).
type stage struct {
	workspace, binary, rootfs string
	tun                       bool
}

// startStaged starts cmd in a new mount namespace holding st's mounts. The namespace is made
// by one OS thread for itself (unshare applies to the calling thread), which then forks cmd,
// so cmd inherits it; the thread is never handed back to the Go scheduler and ends with the
// goroutine, taking its namespace along.
func startStaged(cmd *exec.Cmd, st stage) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := st.mount(); err != nil {
			errc <- fmt.Errorf("stage the sandbox's mounts: %w", err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// mount makes this thread's mount namespace and its mounts.
func (st stage) mount() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if st.tun {
		var host unix.Stat_t
		if err := unix.Stat(tunDevice, &host); err != nil {
			return fmt.Errorf("find %s: %w", tunDevice, err)
		}
		dir := filepath.Dir(tunDevice)
		if err := unix.Mount("agentd-tun", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=4k"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
		if err := unix.Mknod(tunDevice, unix.S_IFCHR|0o666, int(host.Rdev)); err != nil {
			return fmt.Errorf("create %s: %w", tunDevice, err)
		}
		if err := unix.Chmod(tunDevice, 0o666); err != nil { // mknod's mode passes the umask
			return fmt.Errorf("create %s: %w", tunDevice, err)
		}
	}
	if st.workspace == "" && st.binary == "" && st.rootfs == "" {
		return nil
	}
	// The sources are opened before the tmpfs hides what was below stageDir (a data directory
	// or a binary under /dev/shm), and bound through their descriptors.
	binds := []struct {
		src, dst string
		dir      bool
	}{{st.workspace, stagedWorkspace, true}, {st.rootfs, stagedRootfs, true}, {st.binary, stagedBinary, false}}
	fds := make([]int, len(binds))
	for i, b := range binds {
		fds[i] = -1
		if b.src == "" {
			continue
		}
		fd, err := unix.Open(b.src, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return fmt.Errorf("open %s: %w", b.src, err)
		}
		fds[i] = fd
	}
	defer closeAll(fds)
	if err := unix.Mount("agentd-stage", stageDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		"mode=0711,size=64k"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", stageDir, err)
	}
	for i, b := range binds {
		if fds[i] >= 0 {
			if err := bindAt(fds[i], b.src, b.dst, b.dir); err != nil {
				return err
			}
		}
	}
	return nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// bindAt binds src, open as fd, onto a new directory or empty file dst.
func bindAt(fd int, src, dst string, dir bool) error {
	if dir {
		if err := unix.Mkdir(dst, 0o711); err != nil {
			return fmt.Errorf("create %s: %w", dst, err)
		}
	} else {
		f, err := unix.Open(dst, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o555)
		if err != nil {
			return fmt.Errorf("create %s: %w", dst, err)
		}
		unix.Close(f)
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return nil
}

// checkStageDir reports whether the staging directory is there to mount on.
func checkStageDir() error {
	fi, err := os.Stat(stageDir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", stageDir)
	}
	return nil
}
