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
func (c *Cluster) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
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
			done <- result{err: fmt.Errorf("join the cluster's network namespace %s: %w", c.Netns, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, address)
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}
