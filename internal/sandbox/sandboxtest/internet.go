package sandboxtest

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// internet stands in for the internet in the egress probe: a network namespace the test
// makes, joined to the host by a veth pair, with an HTTP server inside. Its addresses are a
// random /30 of 198.18.0.0/15, the range RFC 2544 sets aside for tests, which no network
// routes; the host's route to it is the veth pair, checked before any packet goes there. It
// also holds a link-local address (standing for a metadata service), which sandboxes must not
// reach.
type internet struct {
	addr      string // the server's address
	linkLocal string // its link-local address
	port      string
	marker    string
}

// newInternet makes the namespace and its server, removed at cleanup. It needs root and
// iproute2's ip: without them it skips, or fails under CI.
func newInternet(t *testing.T, host hostNet) internet {
	t.Helper()
	ns, peerAddr, linkLocal := makeInternet(t, host)
	ln := listenIn(t, ns)
	in := internet{addr: peerAddr, linkLocal: linkLocal, port: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		marker: "agentd-internet-" + NewKey()[:16]}
	serveOn(t, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, in.marker)
	}))
	return in
}

// ServeOnInternet serves h in a network namespace that stands in for the internet (see
// internet), removed at cleanup, and returns its base URL (http://<address>:<port>): a
// sandbox with the default network (egress) reaches it as it would a server out there,
// which the host's loopback it could not. It needs root and iproute2's ip: without them it
// skips, or fails under CI.
func ServeOnInternet(t *testing.T, h http.Handler) string {
	t.Helper()
	ns, addr, _ := makeInternet(t, hostNet{})
	ln := listenIn(t, ns)
	serveOn(t, ln, h)
	return "http://" + net.JoinHostPort(addr, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

// serveOn serves h on ln until cleanup.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	// Registered after the namespace's removal, so it runs before: the listening socket holds
	// the namespace.
	t.Cleanup(func() { srv.Close() })
}

// makeInternet makes the namespace, joined to host's, removed at cleanup, and returns its
// path, the address of its end of the veth pair and its link-local address.
func makeInternet(t *testing.T, host hostNet) (nsPath, addr, linkLocal string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "the stand-in for the internet is a network namespace, which needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		Unavailable(t, "the stand-in for the internet needs iproute2's ip: %v", err)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	n := binary.BigEndian.Uint32(r[:4]) % (1 << 15) // a /30 of the /15
	base := uint32(198)<<24 | uint32(18)<<16 | n<<2
	hostAddr, peerAddr := ipv4(base+1), ipv4(base+2)
	linkLocal = fmt.Sprintf("169.254.%d.%d", 200+r[4]%50, 1+r[5]%250)
	tag := fmt.Sprintf("%08x", binary.BigEndian.Uint32(r[4:]))
	ns, hostIf, nsIf := "agentd-inet-"+tag, "agi"+tag[:6]+"h", "agi"+tag[:6]+"n"

	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("cleanup: ip netns del %s: %v: %s", ns, err, out)
		}
	})
	onHost := func(args ...string) { t.Helper(); ip(append(host.ipArgs(), args...)...) }
	onHost("link", "add", hostIf, "type", "veth", "peer", "name", nsIf, "netns", ns)
	onHost("addr", "add", hostAddr+"/30", "dev", hostIf)
	onHost("link", "set", hostIf, "up")
	ip("-n", ns, "link", "set", "lo", "up")
	ip("-n", ns, "addr", "add", peerAddr+"/30", "dev", nsIf)
	ip("-n", ns, "addr", "add", linkLocal+"/32", "dev", nsIf)
	ip("-n", ns, "link", "set", nsIf, "up")
	// Back to the host for everything: sandboxes on a bridge without NAT come from its range.
	ip("-n", ns, "route", "add", "default", "via", hostAddr)
	onHost("route", "add", linkLocal+"/32", "via", peerAddr, "dev", hostIf)
	for _, a := range []string{peerAddr, linkLocal} {
		out, err := exec.Command("ip", append(host.ipArgs(), "route", "get", a)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "dev "+hostIf+" ") {
			t.Fatalf("the host's route to %s is not the test's veth %s: %s %v", a, hostIf, out, err)
		}
	}

	return "/run/netns/" + ns, peerAddr, linkLocal
}

// listenIn opens a TCP listener on every address of the network namespace at path. The
// socket is made by one OS thread that joins the namespace and is never handed back to the
// Go scheduler; the socket keeps its namespace wherever it is used from.
func listenIn(t *testing.T, path string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		f, err := os.Open(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("join %s: %w", path, err)}
			return
		}
		ln, err := net.Listen("tcp4", "0.0.0.0:0")
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.ln
}

func ipv4(v uint32) string {
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).String()
}

// getScript fetches http://addr:port/ with bash's /dev/tcp and prints the answer.
func getScript(addr, port string) string {
	return bashProbe + fmt.Sprintf(`timeout 30 bash -c 'exec 3<>/dev/tcp/%s/%s && printf "GET / HTTP/1.0\r\nHost: x\r\n\r\n" >&3 && cat <&3' 2>&1; true`, addr, port)
}

// escapeEgress: a sandbox of the default network reaches a server past the host (the
// internet), and neither the link-local address beside it nor the host's loopback.
func (s *suite) escapeEgress(t *testing.T) {
	in := newInternet(t, s.host())
	lo := s.serveHost(t, "127.0.0.1:0")
	bx := s.start(t, s.newBackend(t), s.spec())
	res := run(t, bx.client, getScript(in.addr, in.port))
	if !strings.Contains(res.Output, in.marker) {
		t.Fatalf("a sandbox with egress did not reach the server at %s:%s past the host: %q", in.addr, in.port, res.Output)
	}
	targets := []string{in.linkLocal + ":" + in.port, "127.0.0.1:" + lo.port, "10.0.2.2:" + lo.port}
	if open := opened(t, run(t, bx.client, connectScript(targets)).Output, targets); len(open) > 0 {
		t.Fatalf("a sandbox with egress reached %v", open)
	}
}
