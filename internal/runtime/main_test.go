package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// syncBuffer is a bytes.Buffer safe to write from Main's goroutines while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMainRefusesWithoutKey(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--listen", "unix:" + filepath.Join(dir, "s.sock"), "--workspace", filepath.Join(dir, "ws")}
	err := Main(context.Background(), args, func(string) string { return "" }, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), runtimeclient.KeyEnv) {
		t.Fatalf("Main without key: %v", err)
	}
}

func TestMainBadFlags(t *testing.T) {
	getenv := func(string) string { return "k" }
	for _, args := range [][]string{
		{},
		{"--listen", "unix:/x.sock"},
		{"--listen", "udp:1", "--workspace", t.TempDir()},
		{"--listen", "unix:rel.sock", "--workspace", t.TempDir()},
		{"--listen", "unix:/x.sock", "--workspace", "/w", "extra"},
		{"--listen", "unix:/x.sock", "--workspace", "/w", "--sandbox-uid", "-1"},
		{"--listen", "unix:/x.sock", "--workspace", "/w", "--sandbox-uid", "4294967295"},
	} {
		if err := Main(context.Background(), args, getenv, &syncBuffer{}); err == nil {
			t.Fatalf("Main(%q) succeeded", args)
		}
	}
}

// TestMainServesOnUnixSocket starts Main over a stale socket file, talks to it, checks the
// socket mode and that the key left the environment, then stops it.
func TestMainServesOnUnixSocket(t *testing.T) {
	t.Setenv(runtimeclient.KeyEnv, "from-env")
	dir := t.TempDir()
	sock := filepath.Join(dir, "rt.sock")
	ws := filepath.Join(dir, "ws")
	if err := makeStaleSocket(sock); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"--listen", "unix:" + sock, "--workspace", ws, "--sandbox-id", "sb9"}, os.Getenv, stderr)
	}()

	c, err := runtimeclient.NewClient("unix:"+sock, "from-env")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Alive(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("runtime never answered; log:\n%s", stderr)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, ok := os.LookupEnv(runtimeclient.KeyEnv); ok {
		t.Fatal("Main left the key in the environment")
	}
	id, err := c.Identity(ctx)
	if err != nil || id.SandboxID != "sb9" || id.Workspace != ws {
		t.Fatalf("identity %+v, %v", id, err)
	}
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "echo ${" + runtimeclient.KeyEnv + ":-none}"})
	if err != nil || res.Output != "none\n" {
		t.Fatalf("command saw the key: %+v, %v", res, err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Main did not stop within 30s of the cancel")
	}
	if strings.Contains(stderr.String(), "from-env") {
		t.Fatal("the key was logged")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestMainRefusesToReplaceAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "not.sock")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--listen", "unix:" + path, "--workspace", filepath.Join(dir, "ws")}
	if err := Main(context.Background(), args, func(string) string { return "k" }, &syncBuffer{}); err == nil {
		t.Fatal("Main replaced a regular file")
	}
}

// makeStaleSocket leaves a socket file at path with nobody listening, as a crashed runtime does.
func makeStaleSocket(path string) error {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Bind(fd, &syscall.SockaddrUnix{Name: path})
}

// TestMainKeyFile: the key is read from --key-file, which is gone once the runtime serves;
// a missing key file stops Main before it listens.
func TestMainKeyFile(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "rt.sock")
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	args := []string{"--listen", "unix:" + sock, "--workspace", filepath.Join(dir, "ws"), "--key-file", keyFile}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Main(ctx, args, noEnv, &syncBuffer{}) }()
	c, err := runtimeclient.NewClient("unix:"+sock, "from-file")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Identity(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("runtime never answered with the key from the file: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Fatalf("key file left behind: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Main did not stop within 30s of the cancel")
	}

	if err := Main(context.Background(), args, noEnv, &syncBuffer{}); err == nil {
		t.Fatal("Main started without its key file")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("Main listened without a key: %v", err)
	}
}
