package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStartServerInNetns: a server started in a network namespace runs there, listening on
// the address given there, and its unix socket reaches it from this process's namespace.
func TestStartServerInNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		Unavailable(t, "a network namespace needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		Unavailable(t, "no ip command (iproute2)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	netns := fmt.Sprintf("agentd-pgtest-%d", os.Getpid())
	const addr = "10.254.0.1"
	for _, args := range [][]string{
		{"netns", "add", netns},
		{"-n", netns, "link", "set", "lo", "up"},
		{"-n", netns, "addr", "add", addr + "/32", "dev", "lo"},
	} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		if args[0] == "netns" {
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", netns).Run() })
		}
	}

	srv, err := StartServer(ctx, ServerOptions{Netns: netns, Listen: addr})
	if err != nil {
		Unavailable(t, "PostgreSQL: %v", err)
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if !strings.HasPrefix(srv.URL(), "postgres://postgres@"+addr+":") {
		t.Errorf("URL %s: want the listen address", srv.URL())
	}
	conn, err := pgx.Connect(ctx, srv.SocketURL())
	if err != nil {
		t.Fatalf("through the socket: %v", err)
	}
	defer conn.Close(ctx)
	var listen string
	if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil || listen != addr {
		t.Errorf("listen_addresses %q (%v), want %s", listen, err, addr)
	}

	// The postmaster's network namespace is the one asked for.
	pidFile, err := os.ReadFile(filepath.Join(srv.s.data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := bytes.Cut(pidFile, []byte("\n"))
	var got, want syscall.Stat_t
	if err := syscall.Stat("/proc/"+string(pid)+"/ns/net", &got); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join("/run/netns", netns), &want); err != nil {
		t.Fatal(err)
	}
	if got.Ino != want.Ino {
		t.Errorf("the server runs in network namespace %d, want %s's (%d)", got.Ino, netns, want.Ino)
	}
}
