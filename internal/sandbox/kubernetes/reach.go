package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// Transport implements sandbox.Transporter: TLS pinned to the sandbox's runtime key, over a
// connection to its pod's IP (ReachIP) or through the API server's port forwarding to the
// pod (ReachPortForward). The pod is looked up at each connection, so a resumed sandbox's new
// pod is found. It reads the pod from the informers' view, with no call to the API server.
func (b *Backend) Transport(inst sandbox.Instance) (runtimeclient.Transport, error) {
	st, err := decodeState(inst)
	if err != nil {
		return runtimeclient.Transport{}, err
	}
	if st.Pin == "" {
		return runtimeclient.Transport{}, fmt.Errorf("sandbox %s: the instance pins no runtime key", inst.ID)
	}
	if !validID(inst.ID) {
		return runtimeclient.Transport{}, errInvalidID(inst.ID)
	}
	ns := st.Namespace
	if ns == "" {
		ns = b.ns
	}
	tlsConfig := pinnedTLS(st.Pin)
	tlsConfig.ServerName = certName(inst.ID)
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return b.dialPodIP(ctx, ns, inst.ID) }
	if b.reach == ReachPortForward {
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) { return b.dialPortForward(ctx, ns, inst.ID) }
	}
	return runtimeclient.Transport{DialContext: dial, TLS: tlsConfig}, nil
}

// errNotRunning: the sandbox has no running pod to connect to (it is paused, or starting).
var errNotRunning = errors.New("the sandbox's pod does not run")

// runningPod returns the sandbox's pod if it runs.
func (b *Backend) runningPod(ctx context.Context, ns, id string) (*corev1.Pod, error) {
	p, err := b.lookPod(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("sandbox %s: %w", id, errNotRunning)
	}
	return p, nil
}

func (b *Backend) dialPodIP(ctx context.Context, ns, id string) (net.Conn, error) {
	p, err := b.runningPod(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	if p.Status.PodIP == "" {
		return nil, fmt.Errorf("sandbox %s: its pod has no IP yet", id)
	}
	return b.dial(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, strconv.Itoa(runtimePort)))
}

// dialPortForward opens a port forwarding session to the pod's runtime port, one per
// connection, and returns its data stream as a connection.
func (b *Backend) dialPortForward(ctx context.Context, ns, id string) (net.Conn, error) {
	p, err := b.runningPod(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := b.streams()
	if err != nil {
		return nil, fmt.Errorf("port forwarding: %w", err)
	}
	u := b.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(p.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)

	type result struct {
		conn httpstream.Connection
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, proto, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		if err == nil && proto != portforward.PortForwardProtocolV1Name {
			conn.Close()
			err = fmt.Errorf("the API server speaks %q, not %q", proto, portforward.PortForwardProtocolV1Name)
		}
		done <- result{conn, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() { // the dial has no context: close what it opens late
			if r := <-done; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, fmt.Errorf("port forwarding to sandbox %s: %w", id, r.err)
	}
	return forwardedConn(r.conn, runtimePort)
}

// forwardedConn opens the error and data streams of one forwarded connection on conn.
func forwardedConn(conn httpstream.Connection, port int) (net.Conn, error) {
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(port))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port forwarding: error stream: %w", err)
	}
	errStream.Close() // nothing to send on it
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port forwarding: data stream: %w", err)
	}
	fc := &forwarded{conn: conn, data: data}
	go func() {
		// The kubelet reports a failure to reach the port on the error stream; it ends the
		// connection.
		msg, _ := io.ReadAll(errStream)
		if len(msg) > 0 {
			fc.fail(fmt.Errorf("port forwarding: %s", msg))
		}
	}()
	return fc, nil
}

// forwarded is a port forwarding data stream as a net.Conn. It has no deadlines (the
// stream has none); the runtime client bounds its calls with contexts, which close it.
type forwarded struct {
	conn httpstream.Connection
	data httpstream.Stream

	mu  sync.Mutex
	err error
}

func (f *forwarded) fail(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.conn.Close()
}

func (f *forwarded) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if err != nil {
		f.mu.Lock()
		if f.err != nil {
			err = f.err
		}
		f.mu.Unlock()
	}
	return n, err
}

func (f *forwarded) Write(p []byte) (int, error) { return f.data.Write(p) }

func (f *forwarded) Close() error {
	f.data.Reset()
	return f.conn.Close()
}

func (f *forwarded) LocalAddr() net.Addr              { return forwardAddr{} }
func (f *forwarded) RemoteAddr() net.Addr             { return forwardAddr{} }
func (f *forwarded) SetDeadline(time.Time) error      { return nil }
func (f *forwarded) SetReadDeadline(time.Time) error  { return nil }
func (f *forwarded) SetWriteDeadline(time.Time) error { return nil }

type forwardAddr struct{}

func (forwardAddr) Network() string { return "portforward" }
func (forwardAddr) String() string  { return "portforward" }
