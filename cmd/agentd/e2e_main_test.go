package main_test

// End-to-end tests of the agentd binary: TestMain builds it once, and every test runs it as a
// child process on a loopback port with a data directory of its own, talking to it over HTTP
// as a client would.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/sandbox/bwrap"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// agentdVersion is stamped into the binary under test.
const agentdVersion = "e2e-test"

// agentdBin is the binary built by TestMain.
var agentdBin string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agentd-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	agentdBin = filepath.Join(dir, "agentd")
	if err := buildAgentd(agentdBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// A sandbox's runtime outlives the server that started it. Becoming a subreaper makes such
	// orphans children of this process, so the tests can reap the runtimes they kill instead
	// of leaving zombies behind (not every container's init reaps them).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: become subreaper:", err)
		return 1
	}
	code := pgtest.Run(m) // m.Run, with a PostgreSQL server for the tests that ask for one
	reapZombieChildren()
	return code
}

// buildAgentd builds the binary as `make build` does: the full build with the runtime-only
// build packed into it.
func buildAgentd(out string) error {
	steps := [][]string{
		{"go", "build", "-o", out + "-runtime", "-tags", "agentd_runtime_only", "-ldflags", "-X main.version=" + agentdVersion, "."},
		{"go", "build", "-o", out, "-ldflags", "-X main.version=" + agentdVersion, "."},
		{"sh", "../../scripts/pack-runtime.sh", out, out + "-runtime"},
	}
	for _, argv := range steps {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build agentd: %s: %v\n%s", strings.Join(argv, " "), err, b)
		}
	}
	return os.Remove(out + "-runtime")
}

// reapZombieChildren reaps every exited child left, once no test waits for its own.
func reapZombieChildren() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// newDataDir returns a fresh data directory. It is kept short because a sandbox's socket path
// (<dir>/sandboxes/process/<32 hex>/runtime.sock) must fit in 107 bytes, which t.TempDir,
// named after the test, may not. Its cleanup kills every process whose command line names
// the directory (the sandboxes' runtimes, which survive the server by design) and checks that
// none is left.
func newDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killBwrapSandboxes(t, dir)
		killRuntimes(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove data dir: %v", err)
		}
	})
	return dir
}

// killBwrapSandboxes kills the processes of the bwrap sandboxes of the data directory dir,
// found by their cgroups (named as the backend names them), and removes the cgroups and the
// backend's freezer hold. A server that stops drains its warm pool, releases the hold, and
// tests delete the sandboxes they start; this is for a server killed with SIGKILL or one that
// did not stop in time, whose sandboxes run on by design, and whose command lines do not name
// the directory.
func killBwrapSandboxes(t *testing.T, dir string) {
	t.Helper()
	parent := bwrap.CgroupParentOf(filepath.Join(dir, "sandboxes", "bwrap"))
	tops, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	if _, err := os.Stat("/sys/fs/cgroup/" + parent); err == nil {
		tops = append(tops, "/sys/fs/cgroup/"+parent) // cgroup v2
	}
	holds, _ := filepath.Glob("/sys/fs/cgroup/freezer/" + bwrap.FreezerHoldOf(parent)) // frozen, empty
	tops = append(tops, holds...)
	if len(tops) == 0 {
		return
	}
	var groups []string
	for round := 0; ; round++ {
		groups = groups[:0]
		var alive []string
		for _, top := range tops {
			_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				groups = append(groups, p)
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = unix.Kill(pid, unix.SIGKILL)
						alive = append(alive, f)
					}
				}
				return nil
			})
		}
		if len(alive) == 0 {
			break
		}
		if round == 300 {
			t.Errorf("processes of the bwrap sandboxes of %s survive SIGKILL: %v", dir, alive)
			return
		}
		time.Sleep(100 * time.Millisecond) // the kernel to end them
	}
	for i := len(groups) - 1; i >= 0; i-- { // the deepest first
		if err := os.Remove(groups[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove the cgroup of a bwrap sandbox: %v", err)
		}
	}
}

// proc is what the tests read of /proc/<pid>/stat.
type proc struct {
	pid, ppid, session int
	state              byte
}

func (p proc) dead() bool { return p.state == 'Z' || p.state == 'X' }

func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 > len(data) {
		return proc{}, false
	}
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	if _, err := fmt.Sscan(f[1]+" "+f[3], &p.ppid, &p.session); err != nil {
		return proc{}, false
	}
	return p, true
}

func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && pid > 0 && fmt.Sprint(pid) == e.Name() {
			pids = append(pids, pid)
		}
	}
	return pids
}

func cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(data), "\x00"), "\x00", " ")
}

// runtimeLeaders returns the live session leaders whose command line contains s: the
// runtimes of a data directory (the server is no session leader: it runs in the test's
// session).
func runtimeLeaders(s string) []int {
	var out []int
	for _, pid := range allPIDs() {
		p, ok := readProc(pid)
		if !ok || p.dead() || p.session != pid {
			continue
		}
		if strings.Contains(cmdline(pid), s) {
			out = append(out, pid)
		}
	}
	return out
}

// killRuntimes kills the sessions of the runtimes of dir, with everything running in them,
// reaps those that became this process's children, and fails the test if any survives.
func killRuntimes(t *testing.T, dir string) {
	t.Helper()
	sessions := map[int]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, pid := range runtimeLeaders(dir) {
			sessions[pid] = true
		}
		var alive []string
		for _, pid := range allPIDs() {
			p, ok := readProc(pid)
			if !ok || !sessions[p.session] {
				continue
			}
			if p.dead() {
				if p.ppid == os.Getpid() {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
				}
				continue
			}
			_ = unix.Kill(pid, unix.SIGKILL)
			alive = append(alive, fmt.Sprintf("%d (%s)", pid, cmdline(pid)))
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of data dir %s survive SIGKILL: %s", dir, strings.Join(alive, ", "))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killAndReap kills pid and waits until it is gone, reaping it if it is this process's child.
func killAndReap(t *testing.T, pid int) {
	t.Helper()
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("process %d to die", pid), func() (bool, string) {
		p, ok := readProc(pid)
		if !ok {
			return true, ""
		}
		if p.dead() {
			if p.ppid == os.Getpid() {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
			return true, ""
		}
		return false, fmt.Sprintf("state %c", p.state)
	})
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && !p.dead()
}

// waitFor polls cond until it holds, failing the test after timeout with cond's last word.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(delay)
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.Cmd and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testEnv is the environment children run with: the test's own, less every setting of agentd,
// plus a server-wide model (see defaultLLMEnv), with conversation titles off (a title call
// would take a step of a scripted model, in any order beside the agent's), plus extra (which
// wins: the last of duplicate variables does).
func testEnv(extra ...string) []string {
	env := append(defaultLLMEnv(), "AGENTD_CONVERSATION_TITLES=off")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTD_") || k == "SESSION_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// server is one `agentd serve` child process.
type server struct {
	t       *testing.T
	dir     string
	url     string
	cmd     *exec.Cmd
	stdout  *syncBuffer
	stderr  *syncBuffer
	done    chan struct{} // closed once the process has exited and its output is read
	waitErr error         // cmd.Wait's answer, once done is closed
}

// startServer starts `agentd serve` on dir with the process backend, on ports the system
// picks, and waits for GET /alive. env is added to the environment, args to the command line.
func startServer(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	s := launchServer(t, dir, env, args...)
	// Two minutes: the bwrap backend's start-up probe alone may take its whole minute on a
	// machine saturated by others.
	if err := s.waitAlive(2 * time.Minute); err != nil {
		t.Fatalf("agentd serve did not come up: %v\nstdout:\n%s\nstderr:\n%s", err, s.stdout, s.stderr)
	}
	return s
}

// launchServer starts `agentd serve` as startServer does, without waiting for it; its url is
// known once waitAlive found it.
func launchServer(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	argv := append([]string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--sandbox-backend", "process"}, args...)
	cmd := exec.Command(agentdBin, argv...)
	cmd.Env = testEnv(env...)
	s := &server{t: t, dir: dir, cmd: cmd, stdout: new(syncBuffer), stderr: new(syncBuffer), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agentd serve: %v", err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("agentd serve at %q\nstdout:\n%s\nstderr:\n%s", s.url, s.stdout, s.stderr)
		}
	})
	return s
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitAlive waits until the process logs the address it serves on, then polls GET /alive
// there until it answers 200, the process exits, or timeout passes.
func (s *server) waitAlive(timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := errors.New("no address logged")
	for {
		if s.url == "" {
			if addr := s.logged("addr"); addr != "" {
				s.url = "http://" + addr
			}
		}
		if s.url != "" {
			resp, err := hc.Get(s.url + "/alive")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			last = err
		}
		if s.exited() {
			return fmt.Errorf("exited: %v", s.waitErr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s/alive after %v (last error %v)", s.url, timeout, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logged is the value of key in this process's "agentd serving" log line; "" when it has
// none.
func (s *server) logged(key string) string {
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if !strings.Contains(line, "agentd serving") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return strings.Trim(v, `"`)
			}
		}
	}
	return ""
}

// stop sends SIGTERM and waits for the process to exit; it returns the exit code and how
// long the exit took.
func (s *server) stop() (code int, took time.Duration) {
	s.t.Helper()
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !s.exited() {
		s.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.kill()
		s.t.Fatal("agentd serve did not exit within 20s of SIGTERM")
	}
	return exitCode(s.waitErr), time.Since(start)
}

// kill kills the process with SIGKILL (if it still runs) and waits for it.
func (s *server) kill() {
	if !s.exited() {
		_ = s.cmd.Process.Kill()
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("agentd serve (pid %d) still there 30s after SIGKILL", s.cmd.Process.Pid)
	}
}

// exitCode turns cmd.Wait's answer into an exit code; -1 when the process did not exit on
// its own.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// runAgentd runs the binary with args to its end (bounded) and returns its output and exit
// code.
func runAgentd(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentdBin, args...)
	cmd.Env = testEnv(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agentd %s did not finish within 30s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), &out, &errOut)
	}
	if err != nil && exitCode(err) < 0 {
		t.Fatalf("agentd %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), exitCode(err)
}

// generatedKey matches an API key agentd generated.
var generatedKey = regexp.MustCompile(`agd_[0-9A-Za-z]+`)

// scanFiles reports the files under dir whose contents include secret.
func scanFiles(t *testing.T, dir, secret string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed meanwhile (a -shm or -wal at close)
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	return hits
}
