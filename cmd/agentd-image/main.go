// Command agentd-image writes agentd's container image, which `make image` builds from the
// agentd binary of `make build`: an OCI image layout tarball, made without a container
// engine, that `ctr images import` loads and registry clients push (docs/kubernetes.md).
//
// The image holds the statically linked agentd at /agentd, its entrypoint, which runs
// `agentd serve` as an unprivileged user by default. The kubernetes backend's sandbox pods
// run it too, as `agentd sandbox-init` in their init container (as root, with the
// capabilities the backend gives it), which needs nothing beyond the binary. Beside it are
// the CA certificates of Debian's ca-certificates package for the server's outbound TLS
// (model providers, git hosts, webhooks), the user's lines in /etc/passwd and /etc/group, a
// data directory it owns, and /tmp. The same binary and certificates give the same image,
// byte for byte (internal/ociimage).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentd/agentd/internal/ociimage"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("agentd-image", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var o options
	flags.StringVar(&o.binary, "binary", "bin/agentd", "the agentd binary, statically linked (make build)")
	out := flags.String("o", "bin/agentd-image.tar", "the image tarball to write")
	flags.StringVar(&o.name, "name", "localhost/agentd:dev", "the image's reference, which ctr images import names it by")
	flags.StringVar(&o.version, "version", "", "agentd's version, for the image's org.opencontainers.image.version label")
	flags.StringVar(&o.revision, "revision", "", "the commit it was built from, for the image's org.opencontainers.image.revision label")
	flags.StringVar(&o.certs, "ca-certificates", defaultCertsFile, "the CA certificates bundle (Debian's ca-certificates package)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "agentd-image: unexpected arguments %q\n", flags.Args())
		return 2
	}
	img, err := image(o)
	if err != nil {
		fmt.Fprintln(stderr, "agentd-image:", err)
		return 1
	}
	desc, err := ociimage.Write(*out, img)
	if err != nil {
		fmt.Fprintln(stderr, "agentd-image:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s %s\n", *out, o.name, desc.Digest)
	return 0
}
