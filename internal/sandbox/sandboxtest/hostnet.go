package sandboxtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// hostNet is the network of the machine that runs the sandboxes, where the escape suite's
// stand-ins for agentd listen and its stand-in for the internet is joined: this process's
// network namespace, or the one at path (Options.Netns: a test cluster's node).
type hostNet struct{ path string }

func (s *suite) host() hostNet { return hostNet{path: s.opts.Netns} }

// ipArgs are the arguments that make iproute2's ip act in the namespace.
func (h hostNet) ipArgs() []string {
	if h.path == "" {
		return nil
	}
	return []string{"-n", filepath.Base(h.path)}
}

// in runs fn in the namespace: on an OS thread that joins it and is never handed back to the
// Go scheduler. A socket keeps the namespace it was made in wherever it is used from.
func (h hostNet) in(fn func() error) error {
	if h.path == "" {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		f, err := os.Open(h.path)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("join %s: %w", h.path, err)
			return
		}
		done <- fn()
	}()
	return <-done
}

func (h hostNet) listen(network, addr string) (ln net.Listener, err error) {
	err = h.in(func() error {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

func (h hostNet) dial(ctx context.Context, network, addr string) (conn net.Conn, err error) {
	err = h.in(func() error {
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

func (h hostNet) interfaceAddrs() (addrs []net.Addr, err error) {
	err = h.in(func() error {
		addrs, err = net.InterfaceAddrs()
		return err
	})
	return addrs, err
}
