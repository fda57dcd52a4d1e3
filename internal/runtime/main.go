package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/exetrim"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// shutdownGrace is how long running requests get to finish once the runtime is asked to stop.
// Longer commands are killed when their connections close.
const shutdownGrace = 5 * time.Second

// Main is the body of `agentd runtime`. args are the arguments after the subcommand name;
// getenv reads the environment (main passes os.Getenv). It serves until ctx is cancelled (the
// caller cancels it on SIGTERM or SIGINT), then shuts down gracefully.
//
// The session key is read from the file descriptor named by --key-fd (a pipe the backend
// filled), or from the file named by --key-file (for backends that cannot pass a descriptor,
// such as docker; Main deletes the file once read), or else from KeyEnv. A pipe leaves no
// trace a command could read: a variable stays readable in /proc/<pid>/environ even after
// Unsetenv. Main refuses to start without a key, and removes KeyEnv from the environment so
// no command inherits it.
//
// Before it reads the key, Main makes the process not dumpable: the commands it starts may run
// as its own uid, and without that they could read its memory (/proc/<pid>/mem, the key among
// it), its environment and its descriptors, or trace it. See protectProcess.
//
// With --pooled, the key Main reads is a pool's secret: the runtime serves the probes and one
// delivery of its session key and environment authenticated by that secret (see pooled.go),
// and from then on serves as if started with them.
//
// With --sandbox-uid, Main must start as root: it reads its key and makes its socket as root,
// then stays root but works on files as that uid and starts every command as it, with no
// capabilities (see becomeSandboxUser).
func Main(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if err := protectProcess(); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	fs := flag.NewFlagSet("agentd runtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listenAddr := fs.String("listen", "", "where to serve: unix:/abs/path.sock, tcp:127.0.0.1:PORT or fd:N (an inherited listening socket)")
	workspace := fs.String("workspace", "", "workspace directory (created if missing)")
	sandboxID := fs.String("sandbox-id", "", "id of the sandbox this runtime serves")
	keyFD := fs.Int("key-fd", -1, "read the session key from this file descriptor (until EOF)")
	keyFile := fs.String("key-file", "", "read the session key from this file, then delete it (see readKeyFile)")
	tlsCert := fs.String("tls-cert", "", "serve TLS with the certificate in this PEM file (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "the private key of --tls-cert, in a PEM file closed to the commands")
	sandboxUID := fs.Int("sandbox-uid", 0, "run commands, and work on files, as this uid and gid; the runtime must start as root (0: as the runtime's own)")
	pooled := fs.Bool("pooled", false, "the key read is a pool's secret, not a session key: serve nothing but the probes and one delivery of the session key and environment (POST "+runtimeclient.PathDeliver+") authenticated by it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("runtime: unexpected arguments %q", fs.Args())
	}
	if *listenAddr == "" || *workspace == "" {
		return errors.New("runtime: --listen and --workspace are required")
	}
	if u := *sandboxUID; u < 0 || u >= 1<<32-1 {
		return fmt.Errorf("runtime: --sandbox-uid %d is not a uid", u)
	}
	key := getenv(runtimeclient.KeyEnv)
	if *keyFD >= 0 {
		f := os.NewFile(uintptr(*keyFD), "session-key")
		if f == nil {
			return fmt.Errorf("runtime: --key-fd %d is not an open file", *keyFD)
		}
		b, err := io.ReadAll(io.LimitReader(f, 4096))
		f.Close()
		if err != nil {
			return fmt.Errorf("runtime: read session key from fd %d: %w", *keyFD, err)
		}
		key = strings.TrimSpace(string(b))
	}
	if *keyFile != "" {
		k, err := readKeyFile(*keyFile, *sandboxUID)
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		key = k
	}
	if key == "" {
		return fmt.Errorf("runtime: no session key: pass --key-fd or --key-file, or set %s", runtimeclient.KeyEnv)
	}
	if err := os.Unsetenv(runtimeclient.KeyEnv); err != nil {
		return fmt.Errorf("runtime: unset %s: %w", runtimeclient.KeyEnv, err)
	}

	log := slog.New(slog.NewTextHandler(stderr, nil)).With("sandbox_id", *sandboxID)
	ws, err := filepath.Abs(*workspace)
	if err != nil {
		return fmt.Errorf("runtime: workspace: %w", err)
	}
	// The socket is made, and the TLS key read, before the runtime takes the sandbox uid, so
	// that they are root's.
	ln, err := listen(*listenAddr)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if *tlsCert != "" || *tlsKey != "" {
		if ln, err = listenTLS(ln, *tlsCert, *tlsKey, *sandboxUID); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	cfg := ServerConfig{
		SandboxID:  *sandboxID,
		SessionKey: key,
		Logger:     log,
		Version:    version(),
		Env:        os.Environ(),
	}
	if err := prepareMain(ws, *sandboxUID, &cfg); err != nil {
		ln.Close()
		return fmt.Errorf("runtime: %w", err)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		ln.Close()
		return fmt.Errorf("runtime: %w", err)
	}
	var handler interface {
		http.Handler
		Close() error
	} = srv
	if *pooled {
		// Everything is up; the key read is the pool's secret, and the server waits for the
		// delivery's key and environment.
		handler = newPooledHandler(key, srv)
		log.Info("runtime pooled: waiting for its delivery")
	}
	// Once it idles, the runtime returns the heap it grew, if it did, and unmaps the pages of
	// its executable that start-up and its requests mapped (see idle.go).
	var h http.Handler = handler
	if trimExe, terr := exetrim.New(); terr != nil {
		log.Warn("the runtime will keep its executable's pages mapped when idle", "err", terr)
	} else {
		heap := newHeapReturner()
		idle := newIdleTrimmer(IdleTrimAfter, func() { heap.trim(); trimExe() })
		defer idle.stop()
		idle.touch()
		idle.armOnCollections()
		h = idle.handler(handler)
	}
	// Tool sessions end when shutdown begins, so that calls waiting on a terminal return
	// within the grace period instead of being cut off.
	err = serve(ctx, log, ln, h, func() { _ = handler.Close() })
	handler.Close()
	return err
}

// prepareMain takes sandboxUID, if not 0, and creates the workspace ws (as that uid), setting
// cfg's Credential and Workspace for the server.
func prepareMain(ws string, sandboxUID int, cfg *ServerConfig) error {
	if sandboxUID != 0 {
		cred, err := becomeSandboxUser(sandboxUID)
		if err != nil {
			return fmt.Errorf("take the sandbox uid: %w", err)
		}
		cfg.Credential = cred
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	cfg.Workspace = ws
	return nil
}

// readKeyFile reads the session key from path and deletes the file, so that no command the
// runtime runs later can read it. A file on a read-only file system (a Kubernetes Secret's
// volume) cannot be deleted: it may stay only when it is closed to the commands, which run as
// sandboxUID (see closedFile).
func readKeyFile(path string, sandboxUID int) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read session key: %w", err)
	}
	if err := os.Remove(path); errors.Is(err, syscall.EROFS) {
		if cerr := closedFile(path, sandboxUID); cerr != nil {
			return "", fmt.Errorf("session key file on a read-only file system: %w", cerr)
		}
	} else if err != nil {
		return "", fmt.Errorf("delete session key file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// closedFile returns nil if the commands of a runtime started with --sandbox-uid sandboxUID
// cannot read the file at path: it is root's and neither its group nor others may read it,
// and the commands run as another uid, without root's capabilities.
func closedFile(path string, sandboxUID int) error {
	if sandboxUID == 0 {
		return fmt.Errorf("%s stays readable by the commands, which run as the runtime's own uid (no --sandbox-uid)", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not root's alone (mode %v)", path, fi.Mode().Perm())
	}
	return nil
}

// listenTLS serves TLS on ln with the certificate and key in certFile and keyFile. The key
// must be closed to the commands (closedFile): the control plane pins the certificate, and a
// command holding the key could stand in for the runtime.
func listenTLS(ln net.Listener, certFile, keyFile string, sandboxUID int) (net.Listener, error) {
	if certFile == "" || keyFile == "" {
		ln.Close()
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if err := closedFile(keyFile, sandboxUID); err != nil {
		ln.Close()
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}), nil
}

// serve runs an HTTP server on ln until ctx is done, then shuts it down and waits for it.
// onShutdown runs when the shutdown begins.
func serve(ctx context.Context, log *slog.Logger, ln net.Listener, h http.Handler, onShutdown func()) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(onShutdown)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("runtime listening", "addr", ln.Addr().Network()+":"+ln.Addr().String(), "pid", os.Getpid())

	select {
	case err := <-errc:
		return fmt.Errorf("runtime: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("runtime stopping")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("runtime: serve: %w", err)
	}
	return nil
}

// listen opens "unix:/abs/path" (replacing a stale socket, mode 0600) or "tcp:host:port".
func listen(addr string) (net.Listener, error) {
	network, where, ok := strings.Cut(addr, ":")
	if !ok || where == "" {
		return nil, fmt.Errorf("listen %q: want unix:/path, tcp:host:port or fd:N", addr)
	}
	switch network {
	case "tcp":
		ln, err := net.Listen("tcp", where)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return ln, nil
	case "fd":
		// An inherited listening socket: the backend bound it outside the sandbox, so the
		// sandbox needs no writable directory to hold the socket file.
		n, err := strconv.Atoi(where)
		if err != nil || n < 3 {
			return nil, fmt.Errorf("listen %s: want fd:N with N >= 3", addr)
		}
		f := os.NewFile(uintptr(n), "listener")
		if f == nil {
			return nil, fmt.Errorf("listen %s: not an open file", addr)
		}
		defer f.Close() // FileListener holds its own copy
		ln, err := net.FileListener(f)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return ln, nil
	case "unix":
		if !filepath.IsAbs(where) {
			return nil, fmt.Errorf("listen %s: socket path is not absolute", addr)
		}
		if fi, err := os.Lstat(where); err == nil {
			if fi.Mode().Type() != os.ModeSocket {
				return nil, fmt.Errorf("listen %s: %s exists and is not a socket", addr, where)
			}
			if err := os.Remove(where); err != nil {
				return nil, fmt.Errorf("listen %s: remove stale socket: %w", addr, err)
			}
		}
		ln, err := net.Listen("unix", where)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		if err := os.Chmod(where, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen %s: chmod socket: %w", addr, err)
		}
		return ln, nil
	default:
		return nil, fmt.Errorf("listen %q: unknown network %q", addr, network)
	}
}

// version is the module version the binary was built from, or "dev".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
