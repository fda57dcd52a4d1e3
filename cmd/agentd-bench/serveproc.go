package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serveProcess is `agentd serve` in a process of its own, as an operator runs it: the
// figures of the control plane's own memory read its RSS, which holds nothing of the bench's
// clients and model. Its sandboxes use the process backend; its admin listener serves the
// profiles.
type serveProcess struct {
	*server
	cmd       *exec.Cmd
	pid       string
	adminURL  string
	exited    chan struct{}
	waitErr   error
	stderrEnd chan struct{}
}

// startServeProcess runs agentd serve on dataDir, with benchModel as its model, conversation
// titles off and no bound on one user's running sandboxes (as the in-process server) and
// args besides, and waits until it serves. Its warnings and errors go to logw.
func startServeProcess(ctx context.Context, agentd, dataDir string, logw io.Writer, args ...string) (_ *serveProcess, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	key := "bench-" + rand.Text()
	argv := append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--sandbox-backend", "process", "--conversation-titles", "off", "--sandbox-pool", "0",
		"--max-running-sandboxes", "0"}, llmFlags()...)
	cmd := exec.Command(agentd, append(argv, args...)...)
	// A clean environment: nothing of the caller's AGENTD_* or GOMEMLIMIT reaches it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dataDir, "AGENTD_ADMIN_KEY=" + key}
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agentd serve: %w", err)
	}
	p := &serveProcess{cmd: cmd, pid: strconv.Itoa(cmd.Process.Pid), exited: make(chan struct{}), stderrEnd: make(chan struct{}),
		server: &server{key: key, log: benchLogger(logw)}}
	addrs := make(chan [2]string, 1)
	go func() {
		defer close(p.stderrEnd)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "agentd serving") {
				addrs <- [2]string{logField(line, "addr"), logField(line, "admin_addr")}
			}
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				fmt.Fprintln(logw, "agentd serve:", line)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-p.stderrEnd
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	defer func() {
		if err != nil {
			p.stop()
		}
	}()
	select {
	case a := <-addrs:
		p.url, p.adminURL = "http://"+a[0], "http://"+a[1]
	case <-p.exited:
		return nil, fmt.Errorf("agentd serve exited before it served: %v", p.waitErr)
	case <-ctx.Done():
		return p, ctx.Err()
	case <-time.After(time.Minute):
		return p, errors.New("agentd serve did not serve within a minute")
	}
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 16, MaxIdleConnsPerHost: 16}}
	if err := p.readOwner(ctx); err != nil {
		return p, err
	}
	return p, nil
}

// logField reads key=value from a log line of slog's text handler.
func logField(line, key string) string {
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// rss is the resident set size of the server's process.
func (p *serveProcess) rss() (int64, error) { return rssOf(p.pid) }

// rssSplit writes the server's RssAnon and RssFile.
func (p *serveProcess) rssSplit() string {
	anon, err1 := procKB(p.pid, "status", "RssAnon:")
	file, err2 := procKB(p.pid, "status", "RssFile:")
	if err := errors.Join(err1, err2); err != nil {
		return "(" + err.Error() + ")"
	}
	return mib(anon) + " + " + mib(file)
}

// startSandbox starts a sandbox through the API and waits until it is RUNNING; done deletes
// it.
func (p *serveProcess) startSandbox(ctx context.Context) (id string, done func(), err error) {
	var sb struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := p.call(ctx, "POST", "/api/v1/sandboxes", nil, &sb); err != nil {
		return "", func() {}, err
	}
	done = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := p.call(ctx, "DELETE", "/api/v1/sandboxes/"+sb.ID, nil, nil); err != nil {
			p.log.Error("delete sandbox", "sandbox_id", sb.ID, "err", err)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); sb.Status != "RUNNING"; {
		if sb.Status == "ERROR" || sb.Status == "MISSING" {
			return sb.ID, done, fmt.Errorf("sandbox %s is %s", sb.ID, sb.Status)
		}
		if time.Now().After(deadline) {
			return sb.ID, done, fmt.Errorf("sandbox %s not RUNNING after 2 minutes (%s)", sb.ID, sb.Status)
		}
		select {
		case <-ctx.Done():
			return sb.ID, done, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		var got []*struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := p.call(ctx, "GET", "/api/v1/sandboxes?id="+sb.ID, nil, &got); err != nil {
			return sb.ID, done, err
		}
		if len(got) != 1 || got[0] == nil {
			return sb.ID, done, fmt.Errorf("sandbox %s: not found", sb.ID)
		}
		sb.Status = got[0].Status
	}
	return sb.ID, done, nil
}

// saveProfile writes the server's profile name (heap, allocs, goroutine) from its admin
// listener into dir as <figure>.<name>.pprof.
func (p *serveProcess) saveProfile(ctx context.Context, dir, figure, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return p.saveAdmin(ctx, "/debug/pprof/"+name, filepath.Join(dir, figure+"."+name+".pprof"))
}

// saveMetrics writes the server's /metrics, from its admin listener, into path: among them
// the Go runtime's own counters of what its memory holds.
func (p *serveProcess) saveMetrics(ctx context.Context, path string) error {
	return p.saveAdmin(ctx, "/metrics", path)
}

// saveAdmin writes what the server's admin listener answers at route into path.
func (p *serveProcess) saveAdmin(ctx context.Context, route, path string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", p.adminURL+route, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", route, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", route, err)
	}
	return f.Close()
}

// kill ends the server with SIGKILL, as a machine's failure would, and waits until it has
// exited. Its sandboxes live on.
func (p *serveProcess) kill() {
	if p.client != nil {
		p.client.CloseIdleConnections()
	}
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil {
		p.log.Error("kill agentd serve", "err", err)
	}
	<-p.exited
}

// stop ends the server as an operator does, with SIGTERM, and kills it if it has not exited
// within a minute.
func (p *serveProcess) stop() {
	if p.client != nil {
		p.client.CloseIdleConnections()
	}
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.log.Error("stop agentd serve", "err", err)
	}
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.log.Error("agentd serve did not stop within a minute; killing it", "pid", p.pid)
		p.cmd.Process.Kill()
		<-p.exited
	}
}
