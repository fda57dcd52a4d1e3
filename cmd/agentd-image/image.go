package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/agentd/agentd/internal/ociimage"
)

// The image's user, which `agentd serve` runs as, and its data directory, where the server
// keeps what belongs to its machine (on PostgreSQL, its lock and the runtime build it hands
// to local sandboxes; on SQLite, everything).
const (
	uid      = 65532
	userName = "agentd"
	dataDir  = "/var/lib/agentd"
)

// binaryPath is agentd's path in the image, where the kubernetes backend's sandbox pods
// look for it (its --kubernetes-runtime-image).
const binaryPath = "/agentd"

// defaultCertsFile is where Debian's ca-certificates package keeps the bundle, and where
// Go's crypto/x509 looks for it on Linux; the image has it there too.
const defaultCertsFile = "/etc/ssl/certs/ca-certificates.crt"

// ports are those `agentd serve` listens on in the image: the API and the web app, and the
// agent-server API on the next port (agent_server_addr auto).
var ports = []string{"3000/tcp", "3001/tcp"}

// options say what goes into the image.
type options struct {
	binary   string // the agentd binary of make build
	name     string // the image's reference
	version  string // agentd's version, for the image's label
	revision string // the commit it was built from, for the image's label
	certs    string // the CA certificates bundle
}

// image describes agentd's image: a layer of what the system provides (accounts, CA
// certificates, directories), which changes seldom, under a layer of the binary, which
// changes with every commit, so that a registry and a node keep the first across versions.
func image(o options) (ociimage.Image, error) {
	if err := checkStatic(o.binary); err != nil {
		return ociimage.Image{}, err
	}
	if err := checkCerts(o.certs); err != nil {
		return ociimage.Image{}, err
	}
	id := strconv.Itoa(uid)
	dir := fs.ModeDir | 0o755
	system := ociimage.Layer{
		{Path: "etc", Mode: dir},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			userName + ":x:" + id + ":" + id + ":agentd:" + dataDir + ":/sbin/nologin\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\n" + userName + ":x:" + id + ":\n")},
		{Path: "etc/ssl", Mode: dir},
		{Path: "etc/ssl/certs", Mode: dir},
		{Path: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Source: o.certs},
		{Path: "root", Mode: fs.ModeDir | 0o700},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "var", Mode: dir},
		{Path: "var/lib", Mode: dir},
		{Path: "var/lib/agentd", Mode: fs.ModeDir | 0o700, UID: uid, GID: uid},
	}
	binary := ociimage.Layer{{Path: "agentd", Mode: 0o755, Source: o.binary}}
	labels := map[string]string{"org.opencontainers.image.title": "agentd"}
	if o.version != "" {
		labels["org.opencontainers.image.version"] = o.version
	}
	if o.revision != "" {
		labels["org.opencontainers.image.revision"] = o.revision
	}
	return ociimage.Image{
		Name:       o.name,
		Layers:     []ociimage.Layer{system, binary},
		Gzip:       true,
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"serve"},
		// What a container needs of serve's settings: to listen beyond its loopback, and a
		// data directory its user may write. Flags and the environment of a pod override them.
		Env:          []string{"AGENTD_ADDR=0.0.0.0:3000", "AGENTD_DATA_DIR=" + dataDir},
		WorkingDir:   dataDir,
		User:         id + ":" + id,
		ExposedPorts: ports,
		Labels:       labels,
	}, nil
}

// checkStatic refuses a binary that needs a dynamic loader: the image has no C library, nor
// have the sandboxes' images, into which the kubernetes backend copies it as their runtime.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("the agentd binary: %w (make build builds it)", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the agentd binary %s is dynamically linked: build it with CGO_ENABLED=0, as make build does", path)
		}
	}
	return nil
}

// checkCerts checks that the CA certificates bundle is a file this process can read.
func checkCerts(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the CA certificates: %w (Debian's ca-certificates package installs them; scripts/deps.sh does)", err)
	}
	if err != nil {
		return fmt.Errorf("the CA certificates: %w", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("the CA certificates: %s is not a regular file (%v)", path, err)
	}
	return nil
}
