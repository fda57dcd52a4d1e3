package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// ImageTools are the host programs copied into the test image: what the runtime's commands
// and the conformance suite use (bash for the terminal, core utilities for the checks).
var ImageTools = []string{
	"bash", "cat", "chmod", "cp", "date", "dd", "echo", "env", "false", "grep", "head", "id",
	"kill", "ln", "ls", "mkdir", "mv", "printf", "ps", "pwd", "rm", "rmdir", "sed", "seq",
	"sleep", "sort", "stat", "tail", "timeout", "touch", "tr", "true", "tty", "uname", "wc",
}

// ImagePath is the PATH of the test image, which its sandboxes keep.
const ImagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// File is a host file copied into an image, as an executable.
type File struct {
	// Path is where the image has it; Host is the file copied.
	Path, Host string
}

// BuildImage imports an image named ref into the engine, made from the host's ImageTools
// (those present) and the shared libraries they load, laid out usr-merged as on Debian, with
// /bin/sh as bash, a root user, /tmp and /root, and the extra files (statically linked
// programs: their libraries are not looked for). It needs no registry and no network.
func BuildImage(ctx context.Context, cli *client.Client, ref string, extra ...File) error {
	tarball, err := RootfsTar(ImageTools, extra...)
	if err != nil {
		return fmt.Errorf("build test image: %w", err)
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{"ENV PATH=" + ImagePath}})
	if err != nil {
		return fmt.Errorf("import test image: %w", err)
	}
	defer res.Close()
	out, err := io.ReadAll(res)
	if err != nil {
		return fmt.Errorf("import test image: %w", err)
	}
	if bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("import test image: %s", out)
	}
	return nil
}

// RootfsTar returns a root filesystem as a tar stream with the host programs named (those
// found in PATH; at least bash must be) and everything they load, and the extra files.
func RootfsTar(programs []string, extra ...File) ([]byte, error) {
	files := map[string]string{} // path in the image → host file to copy
	for _, f := range extra {
		files[path.Clean("/"+f.Path)] = f.Host
	}
	for _, name := range programs {
		host, err := lookProgram(name)
		if err != nil {
			if name == "bash" {
				return nil, err
			}
			continue
		}
		files[path.Join("/usr/bin", name)] = host
		if err := addLibraries(host, files); err != nil {
			return nil, fmt.Errorf("%s: %w", host, err)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	var mkdirAll func(dir string) error
	mkdirAll = func(dir string) error {
		if dir == "/" || dirs[dir] {
			return nil
		}
		if err := mkdirAll(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: 0o755, ModTime: now})
	}
	for _, d := range []string{"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/etc", "/root", "/dev", "/proc", "/sys"} {
		if err := mkdirAll(d); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: now}); err != nil {
		return nil, err
	}
	links := [][2]string{{"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}, {"usr/bin/sh", "bash"}}
	for _, l := range links {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l[0], Linkname: l[1], Mode: 0o777, ModTime: now}); err != nil {
			return nil, err
		}
	}
	etc := map[string]string{
		"/etc/passwd":   "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"/etc/group":    "root:x:0:\nnogroup:x:65534:\n",
		"/etc/hostname": "sandbox\n",
	}
	for _, name := range slices.Sorted(maps.Keys(etc)) {
		body := etc[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: 0o644, Size: int64(len(body)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := mkdirAll(path.Dir(name)); err != nil {
			return nil, err
		}
		body, err := os.ReadFile(files[name])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(name, "/"), Mode: 0o755, Size: int64(len(body)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lookProgram finds a program in the usual system directories, resolving symlinks.
func lookProgram(name string) (string, error) {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return filepath.EvalSymlinks(p)
		}
	}
	return "", fmt.Errorf("%s is not installed", name)
}

// addLibraries adds the ELF interpreter and every shared library host loads, recursively, to
// files, at usr-merged paths.
func addLibraries(host string, files map[string]string) error {
	f, err := elf.Open(host)
	if err != nil {
		return err
	}
	defer f.Close()
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return nil // static
	}
	if err := addFile(interp, files); err != nil {
		return err
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return err
	}
	dirs := libraryDirs(interp)
	for _, lib := range needed {
		found := ""
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
				found = filepath.Join(d, lib)
				break
			}
		}
		if found == "" {
			return fmt.Errorf("library %s not found in %v", lib, dirs)
		}
		if _, ok := files[usrMerged(found)]; ok {
			continue
		}
		if err := addFile(found, files); err != nil {
			return err
		}
		if err := addLibraries(found, files); err != nil {
			return err
		}
	}
	return nil
}

func addFile(p string, files map[string]string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	files[usrMerged(p)] = real
	return nil
}

// libraryDirs are where the dynamic linker looks, the interpreter's own directory first.
func libraryDirs(interp string) []string {
	dirs := []string{}
	if real, err := filepath.EvalSymlinks(interp); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	multi, _ := filepath.Glob("/usr/lib/*-linux-gnu*")
	dirs = append(dirs, multi...)
	return append(dirs, "/lib", "/usr/lib", "/lib64", "/usr/lib64")
}

// usrMerged maps /bin, /sbin, /lib and /lib64 paths under /usr, where the image keeps them
// (its /bin and the others are links into /usr).
func usrMerged(p string) string {
	for _, top := range []string{"/bin/", "/sbin/", "/lib/", "/lib64/"} {
		if strings.HasPrefix(p, top) {
			return "/usr" + p
		}
	}
	return p
}
