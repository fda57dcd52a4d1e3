package podinit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRules applies each network mode's rules in a network namespace joined by a veth pair
// to another, where a server listens on an address inside a denied prefix, one outside, and
// a name server's: egress reaches the one outside and the name server's port 53 only, none
// reaches nothing; the namespace's own loopback answers in both.
func TestRules(t *testing.T) {
	if os.Geteuid() != 0 {
		unavailable(t, "the test makes network namespaces, which needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "the test needs iproute2's ip: %v", err)
	}
	for _, tt := range []struct {
		network string
		want    map[string]bool // address:port → reachable
	}{
		{NetworkEgress, map[string]bool{"198.18.7.2:80": true, "10.9.9.2:80": false, "10.9.9.3:53": true, "10.9.9.3:80": false, "127.0.0.1:80": true}},
		{NetworkNone, map[string]bool{"198.18.7.2:80": false, "10.9.9.2:80": false, "10.9.9.3:53": false, "127.0.0.1:80": true}},
	} {
		t.Run(tt.network, func(t *testing.T) {
			pod, srv := pair(t)
			for _, a := range []string{"127.0.0.1:80"} {
				listenIn(t, pod, a)
			}
			for _, a := range []string{"198.18.7.2:80", "10.9.9.2:80", "10.9.9.3:53", "10.9.9.3:80"} {
				listenIn(t, srv, a)
			}
			fd, err := unix.Open(pod, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			err = applyRules(Options{
				Network:   tt.network,
				Deny:      []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fc00::/7")},
				Resolvers: []netip.Addr{netip.MustParseAddr("10.9.9.3")},
				netnsFD:   fd,
			})
			if err != nil {
				t.Fatal(err)
			}
			for addr, want := range tt.want {
				conn, err := dialIn(pod, addr)
				if got := err == nil; got != want {
					t.Errorf("%s: reachable %v (%v), want %v", addr, got, err, want)
				}
				if conn != nil {
					conn.Close()
				}
			}
		})
	}
}

func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// pair makes two network namespaces joined by a veth pair: the pod's (10.9.9.1, with
// routes to everything through the other) and the server's (10.9.9.2, 10.9.9.3 and
// 198.18.7.2). Both are removed at cleanup.
func pair(t *testing.T) (pod, srv string) {
	t.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	tag := hex.EncodeToString(r[:])
	podNS, srvNS := "agd-pi-"+tag+"p", "agd-pi-"+tag+"s"
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{podNS, srvNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		ip("-n", ns, "link", "set", "lo", "up")
	}
	ip("-n", podNS, "link", "add", "p0", "type", "veth", "peer", "name", "s0", "netns", srvNS)
	ip("-n", podNS, "addr", "add", "10.9.9.1/24", "dev", "p0")
	ip("-n", podNS, "link", "set", "p0", "up")
	ip("-n", podNS, "route", "add", "default", "via", "10.9.9.2")
	for _, a := range []string{"10.9.9.2/24", "10.9.9.3/32", "198.18.7.2/32"} {
		ip("-n", srvNS, "addr", "add", a, "dev", "s0")
	}
	ip("-n", srvNS, "link", "set", "s0", "up")
	return "/run/netns/" + podNS, "/run/netns/" + srvNS
}

// inNetns runs fn on a thread that joins the namespace at path and is then thrown away.
func inNetns(path string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err == nil {
			err = fn()
		}
		done <- err
	}()
	return <-done
}

func listenIn(t *testing.T, ns, addr string) {
	t.Helper()
	var ln net.Listener
	if err := inNetns(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

func dialIn(ns, addr string) (conn net.Conn, err error) {
	err = inNetns(ns, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return conn, err
}
