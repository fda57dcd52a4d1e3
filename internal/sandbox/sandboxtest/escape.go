package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// testEscape runs the escape suite: what a hostile agent would try from inside a sandbox of
// the default network and limits. Each probe fails if its escape works. A backend that does
// not confine its sandboxes (Options.Confines unset) skips them all; a probe the backend is
// known to fail (Options.KnownEscapes) is skipped with the reason, so the gap stays in sight.
func (s *suite) testEscape(t *testing.T) {
	probes := []struct {
		name string
		run  func(*testing.T)
	}{
		{"BindPort", s.escapeBindPort},
		{"HostNetwork", s.escapeHostNetwork},
		{"HostUnixSockets", s.escapeUnixSockets},
		{"RuntimeMemory", s.escapeRuntimeMemory},
		{"RuntimeOutput", s.escapeRuntimeOutput},
		{"RuntimeSocket", s.escapeRuntimeSocket},
		{"SetuidRoot", s.escapeSetuid},
		{"DefaultMemory", s.escapeDefaultMemory},
		{"DefaultPIDs", s.escapeDefaultPIDs},
		{"Egress", s.escapeEgress},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			if !s.opts.Confines {
				t.Skip("the backend does not confine its sandboxes")
			}
			if why, ok := s.opts.KnownEscapes[p.name]; ok {
				t.Skip("known escape: " + why)
			}
			p.run(t)
		})
	}
}

// hostServer is an HTTP server on the host standing for agentd: it answers every request
// with its marker.
type hostServer struct {
	marker string
	port   string
}

// serveHost starts a hostServer listening on addr ("127.0.0.1:0", "0.0.0.0:0") of the
// sandboxes' host network.
func (s *suite) serveHost(t *testing.T, addr string) hostServer {
	t.Helper()
	ln, err := s.host().listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := hostServer{marker: "agentd-host-" + NewKey()[:16], port: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, hs.marker)
	}), ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return hs
}

// hostAddrs are the IPv4 addresses of the sandboxes' host network other than loopback.
func (s *suite) hostAddrs(t *testing.T) []string {
	t.Helper()
	addrs, err := s.host().interfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			out = append(out, ip.IP.String())
		}
	}
	return out
}

// bashProbe is the start of every probe script: bash's /dev/tcp is the client, so a shell
// without bash would pass every connect check by failing it.
const bashProbe = `[ -n "$BASH_VERSION" ] || { echo "no bash"; exit 0; }; `

// connectScript prints "open <target>" or "closed <target>" for each host:port target, each
// connect bounded by timeout (a dropped packet must not hang the probe).
func connectScript(targets []string) string {
	var sb strings.Builder
	sb.WriteString(bashProbe)
	for _, tg := range targets {
		host, port, _ := strings.Cut(tg, ":")
		fmt.Fprintf(&sb, "if timeout 20 bash -c 'exec 3<>/dev/tcp/%s/%s' 2>/dev/null; then echo open %s; else echo closed %s; fi; ", host, port, tg, tg)
	}
	return sb.String()
}

// opened returns the targets the output of connectScript says were open.
func opened(t *testing.T, out string, targets []string) []string {
	t.Helper()
	if strings.Contains(out, "no bash") {
		t.Fatal("the probe needs bash in the sandbox")
	}
	var open []string
	for _, tg := range targets {
		switch {
		case strings.Contains(out, "open "+tg+"\n"):
			open = append(open, tg)
		case !strings.Contains(out, "closed "+tg+"\n"):
			t.Fatalf("the probe of %s did not run: %q", tg, out)
		}
	}
	return open
}

// gatewayScript prints the sandbox's default gateway, if it has one, from /proc/net/route.
const gatewayScript = `while read -r iface dest gw rest; do if [ "$dest" = 00000000 ]; then ` +
	`printf '%d.%d.%d.%d\n' 0x${gw:6:2} 0x${gw:4:2} 0x${gw:2:2} 0x${gw:0:2}; fi; done < /proc/net/route`

// escapeHostNetwork: from a sandbox of the default network, nothing of the host answers: not
// its loopback (an agentd-like server listens there), not its other addresses, not the
// sandbox's gateway, not the host-loopback alias of slirp4netns (10.0.2.2).
func (s *suite) escapeHostNetwork(t *testing.T) {
	lo := s.serveHost(t, "127.0.0.1:0")
	all := s.serveHost(t, "0.0.0.0:0")
	bx := s.start(t, s.newBackend(t), s.spec())
	targets := []string{"127.0.0.1:" + lo.port, "127.0.0.1:" + all.port, "10.0.2.2:" + lo.port, "10.0.2.2:" + all.port}
	for _, a := range s.hostAddrs(t) {
		targets = append(targets, a+":"+all.port)
	}
	for gw := range strings.FieldsSeq(run(t, bx.client, bashProbe+gatewayScript).Output) {
		targets = append(targets, gw+":"+all.port, gw+":"+lo.port)
	}
	res := run(t, bx.client, connectScript(targets))
	if open := opened(t, res.Output, targets); len(open) > 0 {
		t.Fatalf("a sandbox reached the host's servers at %v", open)
	}
}

// escapeBindPort: a server a sandbox starts, even on the port of a host server (agentd's own,
// as it restarts), is not reachable from the host, and takes nothing from the host server.
func (s *suite) escapeBindPort(t *testing.T) {
	if s.opts.AgentdPath == "" {
		t.Skip("Options.AgentdPath is not set")
	}
	host := s.serveHost(t, "127.0.0.1:0")
	free, err := s.host().listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	bx := s.start(t, s.newBackend(t), s.spec())
	// A second runtime in the sandbox serves on both ports, on every address it has.
	for _, port := range []string{host.port, freePort} {
		res := run(t, bx.client, bashProbe+fmt.Sprintf(
			"(%s=probe %s runtime --listen tcp:0.0.0.0:%s --workspace /tmp/probe-%s > /dev/null 2>&1 &); "+
				"for i in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/%s) 2>/dev/null && { echo listening; exit 0; }; sleep 0.1; done; echo never",
			runtimeclient.KeyEnv, s.opts.AgentdPath, port, port, port))
		if !strings.Contains(res.Output, "listening") {
			t.Fatalf("the sandbox's own server on port %s did not come up: %+v", port, res)
		}
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: s.host().dial}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://127.0.0.1:" + host.port + "/")
	if err != nil {
		t.Fatalf("the host's server on port %s after the sandbox bound it: %v", host.port, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != host.marker {
		t.Fatalf("a client of the host's port %s got %q from someone else: the sandbox took the port", host.port, body)
	}
	for _, a := range append([]string{"127.0.0.1"}, s.hostAddrs(t)...) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := s.host().dial(ctx, "tcp4", net.JoinHostPort(a, freePort))
		cancel()
		if err == nil {
			conn.Close()
			t.Errorf("the host reached a server of the sandbox at %s:%s", a, freePort)
		}
	}
}

// escapeUnixSockets: the host's unix sockets, named or abstract, are neither listed in the
// sandbox's /proc/net/unix nor reachable by path.
func (s *suite) escapeUnixSockets(t *testing.T) {
	name := "agentd-escape-" + NewKey()[:16]
	abstract, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { abstract.Close() })
	dir, err := os.MkdirTemp("", "agd-unix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := dir + "/" + name + ".sock"
	named, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { named.Close() })
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	bx := s.start(t, s.newBackend(t), s.spec())
	res := run(t, bx.client, "head -1 /proc/net/unix; grep -c "+name+" /proc/net/unix; test -S "+path+" && echo visible || echo hidden")
	if !strings.HasPrefix(res.Output, "Num") {
		t.Fatalf("/proc/net/unix in the sandbox: %q", res.Output)
	}
	if strings.Contains(res.Output, "\n1\n") || strings.Contains(res.Output, "\n2\n") {
		t.Errorf("the sandbox's /proc/net/unix lists the host's sockets: %q", res.Output)
	}
	if strings.Contains(res.Output, "visible") {
		t.Errorf("the sandbox sees the host's socket %s", path)
	}
}

// runtimePIDScript prints the pid of the runtime, as the sandbox sees it: the process whose
// command starts with the agentd binary and names the sandbox.
func (s *suite) runtimePIDScript(bx *box) string {
	return fmt.Sprintf(`for p in /proc/[0-9]*; do a=$(tr '\0' ' ' < $p/cmdline 2>/dev/null); `+
		`case "$a" in "%s runtime "*"--sandbox-id %s"*) echo ${p#/proc/};; esac; done`, s.agentdPath(), bx.inst.ID)
}

func (s *suite) agentdPath() string {
	if s.opts.AgentdPath != "" {
		return s.opts.AgentdPath
	}
	return "agentd"
}

// runtimePID returns the runtime's pid inside the sandbox.
func (s *suite) runtimePID(t *testing.T, bx *box) string {
	t.Helper()
	out := strings.Fields(run(t, bx.client, s.runtimePIDScript(bx)).Output)
	if len(out) != 1 {
		t.Fatalf("the runtime's pid in the sandbox: %q, want one", out)
	}
	return out[0]
}

// escapeRuntimeMemory: a command can neither open the runtime's memory nor read its
// environment; the session key shows nowhere in /proc.
func (s *suite) escapeRuntimeMemory(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	pid := s.runtimePID(t, bx)
	// The key is split in the script and joined by bash, so that no command line of the
	// probe holds it whole.
	half := len(bx.key) / 2
	res := run(t, bx.client, bashProbe+fmt.Sprintf(`(exec 3< /proc/%[1]s/mem) 2>/dev/null && echo mem-open; `+
		`cat /proc/%[1]s/environ > /dev/null 2>&1 && echo environ-read; k=%[2]s; k=${k}%[3]s; n=0; `+
		`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do v=$(tr '\0' '\n' < $f 2>/dev/null); `+
		`[[ -n $v && $v == *"$k"* ]] && { n=$((n+1)); echo "$f"; }; done; echo $n`,
		pid, bx.key[:half], bx.key[half:]))
	for _, bad := range []string{"mem-open", "environ-read"} {
		if strings.Contains(res.Output, bad) {
			t.Errorf("a command could %s of the runtime (pid %s in the sandbox)", bad, pid)
		}
	}
	if f := strings.Fields(res.Output); len(f) == 0 || f[len(f)-1] != "0" {
		t.Errorf("the session key shows in the environment or command line of a process in the sandbox: %q", res.Output)
	}
}

// escapeRuntimeOutput: a command can write neither to the runtime's standard output and
// error nor to those of the sandbox's first process (which shares them): they lead out of
// the sandbox, to a log on the host.
func (s *suite) escapeRuntimeOutput(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	pid := s.runtimePID(t, bx)
	res := run(t, bx.client, fmt.Sprintf(`for p in 1 %s; do for fd in 1 2; do `+
		`(echo agentd-forged >> /proc/$p/fd/$fd) 2>/dev/null && echo "wrote $p/$fd"; done; done; true`, pid))
	if strings.Contains(res.Output, "wrote") {
		t.Fatalf("a command wrote to the output of the runtime or the sandbox's first process: %q", res.Output)
	}
}

// escapeRuntimeSocket: a command cannot take the runtime's socket away or stand in for it;
// the runtime still answers with its key afterwards.
func (s *suite) escapeRuntimeSocket(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	run(t, bx.client, `for f in /.agentd/run/* /.agentd/*.sock /run/*.sock /tmp/*.sock; do [ -S "$f" ] && rm -f "$f" && echo "removed $f"; done; true`)
	waitAnswers(t, bx.client)
}

// escapeSetuid: a setuid file a command leaves in the workspace belongs to no root of the
// host, so it gives nobody root.
func (s *suite) escapeSetuid(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	res := run(t, bx.client, `cp "$(command -v bash)" suid && chmod 4755 suid && chown 0:0 suid 2>/dev/null; `+
		`stat -c '%u %a' suid; ./suid -p -c 'echo euid=$EUID'`)
	if bx.inst.HostWorkspace != "" {
		// The host's view: the sandbox's root may be another uid outside.
		if uid := fileUID(t, bx.inst.HostWorkspace+"/suid"); uid == 0 {
			t.Errorf("a setuid file left in the workspace belongs to root on the host: %q", res.Output)
		}
		return
	}
	// No host directory (docker): the container's uids are the host's.
	if f := strings.Fields(res.Output); len(f) < 2 || f[0] == "0" || strings.Contains(res.Output, "euid=0\n") {
		t.Errorf("a setuid file left in the workspace belongs to root or runs as root: %q", res.Output)
	}
}

// fileUID returns the owner of path.
func fileUID(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner for %s", path)
	}
	return st.Uid
}

// escapeDefaultMemory: a memory hog in a sandbox with the default limits is killed, and the
// sandbox's runtime and another sandbox carry on.
func (s *suite) escapeDefaultMemory(t *testing.T) {
	lim := s.opts.DefaultLimits
	if lim.MemoryBytes <= 0 {
		t.Fatal("the default spec has no memory limit (Options.DefaultLimits)")
	}
	s.checkMemoryLimit(t, lim)
}

// escapeDefaultPIDs: a fork bomb in a sandbox with the default limits is held below its
// limit and ends with the sandbox.
func (s *suite) escapeDefaultPIDs(t *testing.T) {
	lim := s.opts.DefaultLimits
	if lim.PIDs <= 0 {
		t.Fatal("the default spec has no pids limit (Options.DefaultLimits)")
	}
	s.checkPIDLimit(t, lim)
}
