package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialContext opens a connection from inside the cluster's network namespace, where the
// API server (NodeIP or 127.0.0.1, port APIServerPort), the node and the pods (PodCIDR) are,
// while the rest of this process stays where it is: the socket is made by an OS thread that
// joins the namespace and is then thrown away, never handed back to the Go scheduler, and a
// socket keeps the namespace it was made in wherever it is used from.
//
// Config dials with it. Client-go's streams (exec, attach, port forwarding over SPDY or
// WebSocket) dial by themselves and ignore rest.Config.Dial; see StreamTransport.
func (c *Cluster) DialContext(ctx context.Context, network, address string) (conn net.Conn, err error) {
	err = c.in(func() error {
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// Listen opens a listener inside the cluster's network namespace, as DialContext dials: a
// server that pods reach at an address of the node (NodeIP, or one a test adds to the
// namespace).
func (c *Cluster) Listen(network, address string) (ln net.Listener, err error) {
	err = c.in(func() error {
		ln, err = net.Listen(network, address)
		return err
	})
	return ln, err
}

// in runs fn on an OS thread that joins the cluster's network namespace and is then thrown
// away, never handed back to the Go scheduler.
func (c *Cluster) in(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		c.mu.Lock()
		fd := c.netnsFD
		var err error
		if fd < 0 {
			err = errors.New("the cluster is closed")
		} else {
			// Joined while the lock keeps Close from closing the descriptor.
			err = unix.Setns(fd, unix.CLONE_NEWNET)
		}
		c.mu.Unlock()
		if err != nil {
			done <- fmt.Errorf("join the cluster's network namespace %s: %w", c.Netns, err)
			return
		}
		done <- fn()
	}()
	return <-done
}
