package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// sandboxJSON is a sandbox as the API answers it, decoded with the wire names.
type sandboxJSON struct {
	ID              string  `json:"id"`
	CreatedByUserID *string `json:"created_by_user_id"`
	SandboxSpecID   string  `json:"sandbox_spec_id"`
	Status          string  `json:"status"`
	SessionAPIKey   *string `json:"session_api_key"`
	ExposedURLs     []any   `json:"exposed_urls"`
	CreatedAt       string  `json:"created_at"`
	Backend         string  `json:"backend"`
	Detail          *string `json:"detail"`
}

type sandboxPageJSON struct {
	Items      []sandboxJSON `json:"items"`
	NextPageID *string       `json:"next_page_id"`
}

// startSandbox starts a sandbox from the default spec and returns its id.
func (e *env) startSandbox(key string) string {
	e.t.Helper()
	var sb sandboxJSON
	e.must("POST", "/api/v1/sandboxes", key, nil, http.StatusOK, &sb)
	if sb.ID == "" {
		e.t.Fatal("started sandbox has no id")
	}
	return sb.ID
}

// runningSandbox starts a sandbox and waits until it is RUNNING.
func (e *env) runningSandbox(key string) string {
	e.t.Helper()
	id := e.startSandbox(key)
	e.waitSandbox(key, id, "RUNNING")
	return id
}

// getSandbox reads one sandbox through the batch get; nil when the caller has no such sandbox.
func (e *env) getSandbox(key, id string) *sandboxJSON {
	e.t.Helper()
	var list []*sandboxJSON
	e.must("GET", "/api/v1/sandboxes?id="+id, key, nil, http.StatusOK, &list)
	if len(list) != 1 {
		e.t.Fatalf("batch get of one id answered %d items", len(list))
	}
	return list[0]
}

// sandboxDir is the process backend's directory of a sandbox.
func (e *env) sandboxDir(id string) string {
	return filepath.Join(e.cfg.DataDir, "sandboxes", "process", id)
}

// projectDir is where the conversations of a sandbox of the process backend work, on the host.
func (e *env) projectDir(id string) string {
	return filepath.Join(e.sandboxDir(id), "workspace", conversation.ProjectDir)
}

// runtimeClient is a client of a RUNNING sandbox's runtime, with the key the API hands out.
func (e *env) runtimeClient(key, id string) *runtimeclient.Client {
	e.t.Helper()
	sb := e.getSandbox(key, id)
	if sb == nil || sb.Status != "RUNNING" || sb.SessionAPIKey == nil || *sb.SessionAPIKey == "" {
		e.t.Fatalf("sandbox %s is not RUNNING with a session key: %+v", id, sb)
	}
	c, err := runtimeclient.NewClient("unix:"+filepath.Join(e.sandboxDir(id), "runtime.sock"), *sb.SessionAPIKey)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.CloseIdleConnections)
	return c
}

// run runs a shell command in a RUNNING sandbox and fails the test unless it exits 0.
func (e *env) run(key, id, command string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := e.runtimeClient(key, id).Run(ctx, runtimeclient.CommandRequest{Command: command, TimeoutSeconds: 15})
	if err != nil {
		e.t.Fatalf("run %q in sandbox %s: %v", command, id, err)
	}
	if res.ExitCode != 0 {
		e.t.Fatalf("run %q in sandbox %s: exit %d, output %q", command, id, res.ExitCode, res.Output)
	}
	return res.Output
}

// startCounter starts a background loop in the sandbox that increments workspace/counter
// every 50 ms. Its command line carries marker, so the host can find the process.
func (e *env) startCounter(key, id, marker string) {
	e.t.Helper()
	e.run(key, id, `nohup sh -c 'i=0; while true; do i=$((i+1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.05; done' `+marker+` >/dev/null 2>&1 &`)
	e.eventually("counter started", func() bool { return e.counter(id) > 0 })
}

// counter reads the sandbox's counter from the host; 0 when it is not written yet.
func (e *env) counter(id string) int {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.sandboxDir(id), "workspace", "counter"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		e.t.Fatalf("counter %q: %v", b, err)
	}
	return n
}

// wantStopped fails unless the processes whose command line contains needle are all frozen:
// stopped, or (a vfork parent whose child was stopped before its exec) asleep in the kernel
// until the resume. A pause returns only once they are, so no wait is needed to see it.
func wantStopped(t *testing.T, needle string) {
	t.Helper()
	pids := processesMatching(t, needle)
	if len(pids) == 0 {
		t.Fatalf("no process matches %q", needle)
	}
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // gone meanwhile: it runs no more either
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || !strings.ContainsRune("TtD", rune(stat[i+2])) {
			t.Fatalf("process %d of a paused sandbox is not stopped: %s", pid, stat)
		}
	}
}

// allStopped says whether the processes whose command line contains needle, and their
// children, are all stopped at a signal (state T or t: no system call under way) or ended.
func allStopped(t *testing.T, needle string) bool {
	var pids []int
	for _, pid := range processesMatching(t, needle) {
		pids = append(pids, pid)
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					pids = append(pids, n)
				}
			}
		}
	}
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // gone
		}
		i := strings.LastIndexByte(string(stat), ')')
		// A child that ended waits for its stopped parent as a zombie: it runs no more either.
		// So does a vfork parent whose child was stopped before its exec (this loop's sh
		// spawns mv and sleep so): it waits in the kernel until the resume, and its child is
		// among those checked.
		if i < 0 || i+2 >= len(stat) {
			return false
		}
		switch state := stat[i+2]; {
		case strings.ContainsRune("TtZX", rune(state)):
		case state == 'D' && vforkWaiting(pid):
		default:
			return false
		}
	}
	return len(pids) > 0
}

// vforkWaiting says whether process pid waits in the kernel for its vfork child to exec or
// exit (kernel_clone, where the kernel inlines wait_for_vfork_done).
func vforkWaiting(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	w := string(b)
	return err == nil && (w == "kernel_clone" || w == "wait_for_vfork_done")
}

// processesMatching returns the pids of live processes whose command line contains needle.
func processesMatching(t *testing.T, needle string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), needle) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// runtimePID finds the pid of a sandbox's runtime: the process listening on its socket.
func (e *env) runtimePID(id string) int {
	e.t.Helper()
	pids := processesMatching(e.t, "unix:"+filepath.Join(e.sandboxDir(id), "runtime.sock"))
	if len(pids) != 1 {
		e.t.Fatalf("want one runtime process of sandbox %s, found %v", id, pids)
	}
	return pids[0]
}

// wantDetail fails unless body is {"detail": <a string containing each of parts>}.
func wantDetail(t *testing.T, body []byte, parts ...string) {
	t.Helper()
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &d); err != nil || d.Detail == "" {
		t.Fatalf("body %s is not {\"detail\": string}", body)
	}
	for _, p := range parts {
		if !strings.Contains(d.Detail, p) {
			t.Fatalf("detail %q does not say %q", d.Detail, p)
		}
	}
}

func TestSandboxLifecycle(t *testing.T) {
	e := newEnv(t)
	userID, key := e.newUser("alice")

	var started sandboxJSON
	e.must("POST", "/api/v1/sandboxes", key, nil, http.StatusOK, &started)
	if started.Status != "STARTING" && started.Status != "RUNNING" {
		t.Fatalf("new sandbox status %q, want STARTING or RUNNING", started.Status)
	}
	if started.SandboxSpecID != "default" || started.Backend != "process" || started.CreatedByUserID == nil || *started.CreatedByUserID != userID {
		t.Fatalf("new sandbox %+v: want spec default, backend process, owner %s", started, userID)
	}
	id := started.ID
	e.waitSandbox(key, id, "RUNNING")
	sb := e.getSandbox(key, id)
	if sb.SessionAPIKey == nil || *sb.SessionAPIKey == "" || sb.ExposedURLs == nil || sb.Detail != nil {
		t.Fatalf("RUNNING sandbox %+v: want a session key, exposed_urls [] and no detail", sb)
	}

	t.Run("runtime runs commands", func(t *testing.T) {
		e := e.in(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := e.runtimeClient(key, id).Run(ctx, runtimeclient.CommandRequest{Command: "echo hello from $(basename $(dirname $PWD)); exit 3"})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 3 || res.Output != "hello from "+id+"\n" {
			t.Fatalf("command answered exit %d output %q; want exit 3 and %q", res.ExitCode, res.Output, "hello from "+id+"\n")
		}
	})

	t.Run("runtime rejects another key", func(t *testing.T) {
		e := e.in(t)
		c, err := runtimeclient.NewClient("unix:"+filepath.Join(e.sandboxDir(id), "runtime.sock"), "not-the-key")
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.Run(ctx, runtimeclient.CommandRequest{Command: "true"})
		var se *runtimeclient.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
			t.Fatalf("command with a wrong key: %v, want a 401", err)
		}
	})

	marker := "counter-" + id
	e.startCounter(key, id, marker)
	if pids := processesMatching(t, marker); len(pids) == 0 {
		t.Fatal("the counter process is not found on the host")
	}

	t.Run("pause freezes the sandbox", func(t *testing.T) {
		e := e.in(t)
		var ok struct {
			Success bool `json:"success"`
		}
		e.must("POST", "/api/v1/sandboxes/"+id+"/pause", key, nil, http.StatusOK, &ok)
		if !ok.Success {
			t.Fatal("pause did not answer success")
		}
		sb := e.getSandbox(key, id)
		if sb.Status != "PAUSED" || sb.SessionAPIKey != nil {
			t.Fatalf("paused sandbox %+v: want PAUSED without a session key", sb)
		}
		wantStopped(t, marker)
		// A write the loop had in flight (its mv in the kernel, state D) may land once the pause
		// has answered; once the loop and its children are all stopped at a signal (T), nothing
		// of the sandbox runs, however long the test looks.
		e.eventually("the loop and its children stopped", func() bool { return allStopped(t, marker) })
		settled := e.counter(id)
		for range 20 {
			if s := e.sandboxStatus(key, id); s != "PAUSED" {
				t.Fatalf("status %q while paused", s)
			}
		}
		wantStopped(t, marker)
		if after := e.counter(id); after != settled {
			t.Fatalf("counter went from %d to %d while paused", settled, after)
		}
	})

	t.Run("pause twice answers success", func(t *testing.T) {
		e := e.in(t)
		e.must("POST", "/api/v1/sandboxes/"+id+"/pause", key, nil, http.StatusOK, nil)
		if s := e.sandboxStatus(key, id); s != "PAUSED" {
			t.Fatalf("status after a second pause %q", s)
		}
	})

	t.Run("resume thaws the sandbox", func(t *testing.T) {
		e := e.in(t)
		e.must("POST", "/api/v1/sandboxes/"+id+"/resume", key, nil, http.StatusOK, nil)
		if s := e.sandboxStatus(key, id); s != "RUNNING" {
			t.Fatalf("status after resume %q, want RUNNING (resume returns once the runtime answers)", s)
		}
		before := e.counter(id)
		e.eventually("counter advancing after resume", func() bool { return e.counter(id) > before+2 })
		if out := e.run(key, id, "echo again"); out != "again\n" {
			t.Fatalf("command after resume answered %q", out)
		}
	})

	t.Run("resume a running sandbox answers success", func(t *testing.T) {
		e := e.in(t)
		e.must("POST", "/api/v1/sandboxes/"+id+"/resume", key, nil, http.StatusOK, nil)
		if s := e.sandboxStatus(key, id); s != "RUNNING" {
			t.Fatalf("status after resuming a running sandbox %q", s)
		}
	})

	// A conversation on the sandbox, to see it lose its sandbox.
	task := e.startConversation(key, map[string]any{"sandbox_id": id})
	convID := e.waitTaskReady(key, task.ID)

	t.Run("delete removes processes and files", func(t *testing.T) {
		e := e.in(t)
		socket := "unix:" + filepath.Join(e.sandboxDir(id), "runtime.sock")
		if pids := processesMatching(t, socket); len(pids) != 1 {
			t.Fatalf("runtime processes before delete: %v, want one", pids)
		}
		e.must("DELETE", "/api/v1/sandboxes/"+id, key, nil, http.StatusOK, nil)
		if _, err := os.Stat(e.sandboxDir(id)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("sandbox directory after delete: %v, want it gone", err)
		}
		if pids := processesMatching(t, marker); len(pids) != 0 {
			t.Fatalf("counter processes %v still run after delete", pids)
		}
		if pids := processesMatching(t, socket); len(pids) != 0 {
			t.Fatalf("runtime processes %v still run after delete", pids)
		}
		if sb := e.getSandbox(key, id); sb != nil {
			t.Fatalf("batch get after delete answered %+v, want null", sb)
		}
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", key, nil, http.StatusOK, &page)
		if len(page.Items) != 0 {
			t.Fatalf("search after delete answered %+v, want no sandboxes", page.Items)
		}
		for _, op := range []struct{ method, path string }{
			{"DELETE", "/api/v1/sandboxes/" + id},
			{"POST", "/api/v1/sandboxes/" + id + "/pause"},
			{"POST", "/api/v1/sandboxes/" + id + "/resume"},
		} {
			status, body := e.call(op.method, op.path, key, nil)
			if status != http.StatusNotFound {
				t.Fatalf("%s %s after delete: %d %s, want 404", op.method, op.path, status, body)
			}
		}
	})

	t.Run("its conversation reads MISSING", func(t *testing.T) {
		e := e.in(t)
		c := e.getConversation(key, convID)
		if c == nil || c.SandboxStatus != "MISSING" || c.ConversationStatus != "STOPPED" || c.SessionAPIKey != nil || c.SandboxID != id {
			t.Fatalf("conversation after its sandbox was deleted: %+v; want sandbox_status MISSING, STOPPED, no session key", c)
		}
	})
}

func TestSandboxErrors(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	aliceSB := e.runningSandbox(alice)

	for _, tc := range []struct {
		name, method, path, key string
		want                    int
		detail                  string
	}{
		{"pause unknown", "POST", "/api/v1/sandboxes/0123456789abcdef0123456789abcdef/pause", alice, 404, "Sandbox not found"},
		{"resume unknown", "POST", "/api/v1/sandboxes/0123456789abcdef0123456789abcdef/resume", alice, 404, "Sandbox not found"},
		{"delete unknown", "DELETE", "/api/v1/sandboxes/0123456789abcdef0123456789abcdef", alice, 404, "Sandbox not found"},
		{"pause another user's", "POST", "/api/v1/sandboxes/" + aliceSB + "/pause", bob, 404, "Sandbox not found"},
		{"resume another user's", "POST", "/api/v1/sandboxes/" + aliceSB + "/resume", bob, 404, "Sandbox not found"},
		{"delete another user's", "DELETE", "/api/v1/sandboxes/" + aliceSB, bob, 404, "Sandbox not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call(tc.method, tc.path, tc.key, nil)
			if status != tc.want {
				t.Fatalf("%d %s, want %d", status, body, tc.want)
			}
			wantDetail(t, body, tc.detail)
		})
	}

	t.Run("another user's sandbox is untouched and invisible", func(t *testing.T) {
		e := e.in(t)
		if s := e.sandboxStatus(alice, aliceSB); s != "RUNNING" {
			t.Fatalf("alice's sandbox is %q after bob's attempts, want RUNNING", s)
		}
		if _, err := os.Stat(e.sandboxDir(aliceSB)); err != nil {
			t.Fatalf("alice's sandbox directory: %v", err)
		}
		var list []*sandboxJSON
		e.must("GET", "/api/v1/sandboxes?id="+aliceSB+"&id=nope", bob, nil, http.StatusOK, &list)
		if len(list) != 2 || list[0] != nil || list[1] != nil {
			t.Fatalf("bob's batch get of alice's sandbox: %+v, want [null, null]", list)
		}
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", bob, nil, http.StatusOK, &page)
		if len(page.Items) != 0 || page.NextPageID != nil {
			t.Fatalf("bob's search: %+v, want empty", page)
		}
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 1 || page.Items[0].ID != aliceSB {
			t.Fatalf("alice's search: %+v, want her sandbox", page)
		}
	})

	t.Run("batch get keeps order", func(t *testing.T) {
		e := e.in(t)
		var list []*sandboxJSON
		e.must("GET", "/api/v1/sandboxes?id=nope&id="+aliceSB+"&id=nope2", alice, nil, http.StatusOK, &list)
		if len(list) != 3 || list[0] != nil || list[1] == nil || list[1].ID != aliceSB || list[2] != nil {
			t.Fatalf("batch get: %+v, want [null, the sandbox, null]", list)
		}
	})

	t.Run("unknown spec", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/sandboxes?sandbox_spec_id=nope", alice, nil)
		wantProblem(t, status, body, "value_error", "query", "sandbox_spec_id")
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 1 {
			t.Fatalf("a rejected start left a record: %+v", page.Items)
		}
	})
}

func TestSandboxSpecs(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Specs = append(c.Specs, config.SpecConfig{ID: "isolated", Description: "no network", Network: "none"})
	})
	_, key := e.newUser("alice")

	type specJSON struct {
		ID         string            `json:"id"`
		Command    []string          `json:"command"`
		InitialEnv map[string]string `json:"initial_env"`
		WorkingDir string            `json:"working_dir"`
		Network    string            `json:"network"`
		Warnings   []string          `json:"warnings"`
	}
	var page struct {
		Items      []specJSON `json:"items"`
		NextPageID *string    `json:"next_page_id"`
	}
	e.must("GET", "/api/v1/sandbox-specs/search", key, nil, http.StatusOK, &page)
	byID := map[string]specJSON{}
	for _, s := range page.Items {
		byID[s.ID] = s
	}
	def, ok := byID["default"]
	if !ok || len(def.Command) == 0 || def.WorkingDir == "" || def.Network != "egress" {
		t.Fatalf("specs %+v: want default with a command, a working dir and network egress", page.Items)
	}
	if _, ok := byID["isolated"]; !ok || page.NextPageID != nil || len(page.Items) != 2 {
		t.Fatalf("specs %+v (next %v): want default and isolated on one page", page.Items, page.NextPageID)
	}

	t.Run("paging", func(t *testing.T) {
		e := e.in(t)
		var first, second struct {
			Items      []specJSON `json:"items"`
			NextPageID *string    `json:"next_page_id"`
		}
		e.must("GET", "/api/v1/sandbox-specs/search?limit=1", key, nil, http.StatusOK, &first)
		if len(first.Items) != 1 || first.NextPageID == nil {
			t.Fatalf("first page %+v, want one spec and a next page", first)
		}
		e.must("GET", "/api/v1/sandbox-specs/search?limit=1&page_id="+*first.NextPageID, key, nil, http.StatusOK, &second)
		if len(second.Items) != 1 || second.NextPageID != nil || second.Items[0].ID == first.Items[0].ID {
			t.Fatalf("second page %+v after %+v, want the other spec and no next page", second, first)
		}
	})

	t.Run("batch get", func(t *testing.T) {
		e := e.in(t)
		var list []*specJSON
		e.must("GET", "/api/v1/sandbox-specs?id=nope&id=default", key, nil, http.StatusOK, &list)
		if len(list) != 2 || list[0] != nil || list[1] == nil || list[1].ID != "default" {
			t.Fatalf("batch get: %+v, want [null, default]", list)
		}
	})

	t.Run("warnings", func(t *testing.T) {
		if len(def.Warnings) == 0 || len(byID["isolated"].Warnings) < 2 {
			t.Fatalf("warnings: default %q, isolated %q", def.Warnings, byID["isolated"].Warnings)
		}
	})

	t.Run("a spec the backend cannot honour does not start", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/sandboxes?sandbox_spec_id=isolated", key, nil)
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("start from an unsupported spec: %d %s, want 422", status, body)
		}
		wantDetail(t, body, "network")
		var sbs sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", key, nil, http.StatusOK, &sbs)
		if len(sbs.Items) != 0 {
			t.Fatalf("a rejected start left a record: %+v", sbs.Items)
		}
	})
}

func TestSandboxLimit(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MaxRunningSandboxes = 1 })
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")

	first := e.runningSandbox(alice)
	wantLimit := func(t *testing.T, status int, body []byte) {
		t.Helper()
		if status != http.StatusTooManyRequests {
			t.Fatalf("%d %s, want 429", status, body)
		}
		wantDetail(t, body, "Too many running sandboxes")
	}

	t.Run("second start is refused", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/sandboxes", alice, nil)
		wantLimit(t, status, body)
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 1 {
			t.Fatalf("a refused start left a record: %+v", page.Items)
		}
	})

	t.Run("the limit is per user", func(t *testing.T) {
		e := e.in(t)
		e.runningSandbox(bob)
	})

	t.Run("a conversation start at the limit fails with a reason", func(t *testing.T) {
		e := e.in(t)
		task := e.startConversation(alice, map[string]any{})
		got := e.waitTask(alice, task.ID, "ERROR")
		if got.Detail == nil || !strings.Contains(*got.Detail, "too many running sandboxes") || got.AppConversationID != nil {
			t.Fatalf("start task at the limit: %+v; want ERROR saying why, without app_conversation_id", got)
		}
	})

	var second string
	t.Run("paused sandboxes do not count", func(t *testing.T) {
		e := e.in(t)
		e.must("POST", "/api/v1/sandboxes/"+first+"/pause", alice, nil, http.StatusOK, nil)
		second = e.runningSandbox(alice)
	})

	t.Run("resume at the limit is refused", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/sandboxes/"+first+"/resume", alice, nil)
		wantLimit(t, status, body)
		if s := e.sandboxStatus(alice, first); s != "PAUSED" {
			t.Fatalf("refused resume left the sandbox %q, want PAUSED", s)
		}
	})

	t.Run("resume after deleting the other", func(t *testing.T) {
		e := e.in(t)
		e.must("DELETE", "/api/v1/sandboxes/"+second, alice, nil, http.StatusOK, nil)
		e.must("POST", "/api/v1/sandboxes/"+first+"/resume", alice, nil, http.StatusOK, nil)
		if s := e.sandboxStatus(alice, first); s != "RUNNING" {
			t.Fatalf("status after resume %q, want RUNNING", s)
		}
	})
}
