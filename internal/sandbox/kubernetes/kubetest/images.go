package kubetest

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/ociimage"
)

// The images every cluster has. Nothing is ever pulled: pods name these with
// imagePullPolicy: Never, and containerd's sandbox image is PauseImage.
const (
	// PauseImage is the pod sandbox image: Kubernetes' pause.c of the same release, built
	// statically by scripts/kube-build.sh. Its name is the one the kubelet expects.
	PauseImage = "registry.k8s.io/pause:3.10.1"
	// BusyboxImage holds Debian's static busybox with a link for each applet in /bin (sh,
	// nc, httpd, wget, …); its command is sh.
	BusyboxImage = "localhost/kubetest/busybox:static"
)

// busyboxPath is where Debian's busybox-static package installs busybox.
const busyboxPath = "/bin/busybox"

// writeBaseImages writes the tarballs of PauseImage and BusyboxImage into dir and returns
// their paths.
func writeBaseImages(dir, binDir string) ([]string, error) {
	pauseRoot := filepath.Join(dir, "pause-root")
	if err := os.MkdirAll(pauseRoot, 0o755); err != nil {
		return nil, err
	}
	if err := copyFile(filepath.Join(binDir, "pause"), filepath.Join(pauseRoot, "pause"), 0o755); err != nil {
		return nil, err
	}

	bbRoot := filepath.Join(dir, "busybox-root")
	for _, d := range []string{"bin", "tmp", "etc", "root"} {
		if err := os.MkdirAll(filepath.Join(bbRoot, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(bbRoot, "tmp"), os.ModeSticky|0o777); err != nil {
		return nil, err
	}
	if err := copyFile(busyboxPath, filepath.Join(bbRoot, "bin", "busybox"), 0o755); err != nil {
		return nil, err
	}
	applets, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	for _, a := range strings.Fields(string(applets)) {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(bbRoot, "bin", a)); err != nil {
			return nil, err
		}
	}

	pause, err := ociimage.Dir(pauseRoot)
	if err != nil {
		return nil, err
	}
	bb, err := ociimage.Dir(bbRoot)
	if err != nil {
		return nil, err
	}
	images := []ociimage.Image{
		{Name: PauseImage, Layers: []ociimage.Layer{pause}, Entrypoint: []string{"/pause"}},
		{Name: BusyboxImage, Layers: []ociimage.Layer{bb}, Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}},
	}
	var paths []string
	for i, img := range images {
		p := filepath.Join(dir, fmt.Sprintf("image-%d.tar", i))
		if _, err := ociimage.Write(p, img); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, perm)
}

// isStatic reports whether the ELF executable at path needs no dynamic loader: Debian's
// busybox package installs a dynamically linked busybox at the same path as busybox-static,
// and it could not run in an image without a C library.
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}
