package main

import (
	"bytes"
	"debug/elf"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/agentd/agentd/internal/ociimage"
)

// staticBinary builds a small statically linked program to stand for agentd.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"agentd\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "agentd")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a stand-in for agentd: %v\n%s", err, out)
	}
	return bin
}

// build runs the command and returns what it printed.
func build(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("agentd-image %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// TestImage: the image runs agentd serve as the unprivileged user, with the settings a
// container needs, from /agentd; its lower layer holds the accounts, the CA certificates
// given, /tmp and the user's data directory, its upper layer the binary alone; both are
// compressed and owned by root but for the data directory. A second build gives the same
// tarball, and so the same digest, which the command prints.
func TestImage(t *testing.T) {
	bin := staticBinary(t)
	certs := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "agentd-image.tar")
	args := []string{"-binary", bin, "-ca-certificates", certs, "-name", "localhost/agentd:v9", "-version", "v9", "-revision", "0123abcd"}
	printed := build(t, append(args, "-o", out)...)
	c, err := ociimage.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := out + ": localhost/agentd:v9 " + c.Digest.String() + "\n"; printed != want {
		t.Errorf("printed %q, want %q", printed, want)
	}

	want := ocispec.ImageConfig{
		User:         "65532:65532",
		ExposedPorts: map[string]struct{}{"3000/tcp": {}, "3001/tcp": {}},
		Env:          []string{"AGENTD_ADDR=0.0.0.0:3000", "AGENTD_DATA_DIR=/var/lib/agentd"},
		Entrypoint:   []string{"/agentd"},
		Cmd:          []string{"serve"},
		WorkingDir:   "/var/lib/agentd",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "agentd",
			"org.opencontainers.image.version":  "v9",
			"org.opencontainers.image.revision": "0123abcd",
		},
	}
	if !reflect.DeepEqual(c.Config.Config, want) {
		t.Errorf("config:\n got %+v\nwant %+v", c.Config.Config, want)
	}
	if c.Config.OS != "linux" || c.Config.Created != nil {
		t.Errorf("config: os %q, created %v", c.Config.OS, c.Config.Created)
	}
	for i, l := range c.Manifest.Layers {
		if l.MediaType != ocispec.MediaTypeImageLayerGzip {
			t.Errorf("layer %d is %s, want gzip", i, l.MediaType)
		}
	}

	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type entry struct {
		mode     fs.FileMode
		uid, gid int
		data     string
	}
	dir := fs.ModeDir | 0o755
	wantLayers := []map[string]entry{{
		"etc":                               {dir, 0, 0, ""},
		"etc/passwd":                        {0o644, 0, 0, "root:x:0:0:root:/root:/sbin/nologin\nagentd:x:65532:65532:agentd:/var/lib/agentd:/sbin/nologin\n"},
		"etc/group":                         {0o644, 0, 0, "root:x:0:\nagentd:x:65532:\n"},
		"etc/ssl":                           {dir, 0, 0, ""},
		"etc/ssl/certs":                     {dir, 0, 0, ""},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0, read(certs)},
		"root":                              {fs.ModeDir | 0o700, 0, 0, ""},
		"tmp":                               {fs.ModeDir | fs.ModeSticky | 0o777, 0, 0, ""},
		"var":                               {dir, 0, 0, ""},
		"var/lib":                           {dir, 0, 0, ""},
		"var/lib/agentd":                    {fs.ModeDir | 0o700, 65532, 65532, ""},
	}, {
		"agentd": {0o755, 0, 0, read(bin)},
	}}
	if len(c.Layers) != len(wantLayers) {
		t.Fatalf("%d layers, want %d", len(c.Layers), len(wantLayers))
	}
	for i, l := range c.Layers {
		got := map[string]entry{}
		for _, e := range l {
			got[e.Path] = entry{e.Mode, e.UID, e.GID, string(e.Data)}
		}
		if !reflect.DeepEqual(got, wantLayers[i]) {
			t.Errorf("layer %d:\n got %+v\nwant %+v", i, got, wantLayers[i])
		}
	}

	again := filepath.Join(t.TempDir(), "again.tar")
	build(t, append(args, "-o", again)...)
	if read(out) != read(again) {
		t.Error("two builds from the same binary gave different tarballs")
	}
}

// TestImageRefuses: a binary that is not a static executable, or CA certificates that are
// not there, write no image.
func TestImageRefuses(t *testing.T) {
	bin := staticBinary(t)
	text := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"not an executable": {"-binary", text},
		"no certificates":   {"-binary", bin, "-ca-certificates", filepath.Join(t.TempDir(), "none.crt")},
	}
	// A dynamically linked program of the machine, where it has one.
	if f, err := elf.Open("/bin/sh"); err == nil {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				cases["dynamically linked"] = []string{"-binary", "/bin/sh"}
			}
		}
		f.Close()
	}
	for name, args := range cases {
		out := filepath.Join(t.TempDir(), "image.tar")
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "-o", out), &stdout, &stderr); code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", name, code, stderr.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an image was written", name)
		}
	}
}
