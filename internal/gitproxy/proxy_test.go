package gitproxy_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/gitproxy"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

const testToken = "ghp_gitproxyTestToken0123456789abcdef"

// box is a running sandbox with a client of its runtime.
type box struct {
	b    sandbox.Backend
	inst sandbox.Instance
	rt   *runtimeclient.Client
}

func startBox(t *testing.T, bc backendCase) *box {
	t.Helper()
	b := bc.new(t)
	key := sandboxtest.NewKey()
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), OwnerID: "alice", Spec: bc.spec(), SessionKey: key})
	rt, err := runtimeclient.NewClient(inst.Endpoint, key)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for rt.Alive(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's runtime never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &box{b: b, inst: inst, rt: rt}
}

// run runs a shell command in the sandbox as the agent's git would run.
func (bx *box) run(t *testing.T, cmd string) runtimeclient.CommandResult {
	t.Helper()
	res, err := bx.rt.Run(context.Background(), runtimeclient.CommandRequest{Command: cmd, TimeoutSeconds: 300,
		Env: map[string]string{"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}})
	if err != nil {
		t.Fatalf("run %q: %v", cmd, err)
	}
	return res
}

func (bx *box) must(t *testing.T, cmd string) string {
	t.Helper()
	res := bx.run(t, cmd)
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d: %s", cmd, res.ExitCode, res.Output)
	}
	return res.Output
}

// newProxy is agentd's git proxy for the sandbox, whose conversations work on repos.
func newProxy(t *testing.T, srv *gittest.Server, bx *box, repos ...gitproxy.Repository) *gitproxy.Service {
	t.Helper()
	p := gitproxy.NewService(gitproxy.Options{
		Remotes: srv,
		Repositories: func(_ context.Context, owner, sandboxID string) ([]gitproxy.Repository, error) {
			if owner != "alice" || sandboxID != bx.inst.ID {
				return nil, nil
			}
			return repos, nil
		},
		Runtime: func(context.Context, string, string) (*runtimeclient.Client, error) { return bx.rt, nil },
		HTTP:    func(context.Context, string) (*http.Client, error) { return http.DefaultClient, nil },
	})
	t.Cleanup(p.Close)
	return p
}

// TestProxy: git in a sandbox clones a branch of a private repository and pushes a new
// branch through the proxy; another repository is refused; the token is nowhere in the
// sandbox; and the remote keeps working after agentd restarts and after a pause.
func TestProxy(t *testing.T) {
	for _, bc := range backendCases {
		t.Run(bc.name, func(t *testing.T) { testProxy(t, bc) })
	}
	sandboxtest.CheckNoChildren(t)
}

func testProxy(t *testing.T, bc backendCase) {
	srv := gittest.Start(t, testToken)
	if err := srv.Create("octo/hello",
		gittest.Commit{Files: map[string]string{"README.md": "hello\n"}},
		gittest.Commit{Branch: "feature", Files: map[string]string{"feature.txt": "on the branch\n"}},
	); err != nil {
		t.Fatal(err)
	}
	if err := srv.Create("octo/secret", gittest.Commit{Files: map[string]string{"x": "x\n"}}); err != nil {
		t.Fatal(err)
	}
	bx := startBox(t, bc)
	p := newProxy(t, srv, bx, gitproxy.Repository{Provider: "github", Name: "octo/hello"})
	base, err := p.Attach(context.Background(), "alice", bx.inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %q", base)
	}
	remote := gitproxy.Path(base, "github", "octo/hello")

	if out := bx.must(t, "git clone -q --branch feature "+remote+" hello && cat hello/feature.txt"); out != "on the branch\n" {
		t.Fatalf("the clone's feature.txt: %q", out)
	}
	push := func(branch string) {
		t.Helper()
		bx.must(t, "cd hello && git checkout -q -b "+branch+" && echo "+branch+" > "+branch+".txt && git add . && "+
			"git -c user.name='Agent Smith' -c user.email=agent@example.com commit -q -m "+branch+" && git push -q origin "+branch)
		got, err := srv.Git("octo/hello", "log", "-1", "--format=%an <%ae> %s", branch)
		if err != nil || got != "Agent Smith <agent@example.com> "+branch+"\n" {
			t.Fatalf("the pushed branch %s upstream: %q, %v", branch, got, err)
		}
	}
	push("pushed")

	// Only the conversations' repositories, and only under their provider.
	for _, other := range []string{gitproxy.Path(base, "github", "octo/secret"), gitproxy.Path(base, "gitlab", "octo/hello")} {
		res := bx.run(t, "git ls-remote "+other)
		if res.ExitCode == 0 || !strings.Contains(res.Output, "not a repository of this sandbox's conversations") {
			t.Fatalf("ls-remote %s: exit %d: %s", other, res.ExitCode, res.Output)
		}
	}
	for _, r := range srv.Requests() {
		if !r.Authorized {
			t.Errorf("a request reached the provider without the token: %+v", r)
		}
	}

	// agentd restarts: a new proxy opens the channel again, on the same port.
	p.Close()
	p = newProxy(t, srv, bx, gitproxy.Repository{Name: "octo/hello"})
	if again, err := p.Attach(context.Background(), "alice", bx.inst.ID); err != nil || again != base {
		t.Fatalf("after a restart: %q, %v (was %q)", again, err, base)
	}
	push("after-restart")

	// A pause freezes the channel; after the resume it carries on.
	if err := bx.b.Pause(context.Background(), bx.inst); err != nil {
		t.Fatal(err)
	}
	if err := bx.b.Resume(context.Background(), bx.inst); err != nil {
		t.Fatal(err)
	}
	push("after-pause")

	checkNoToken(t, bx)
}

// checkNoToken fails t if the token is in any file of the sandbox's workspace, in .git/config
// above all, or in the environment of any of the sandbox's processes.
func checkNoToken(t *testing.T, bx *box) {
	t.Helper()
	if cfg := bx.must(t, "cat hello/.git/config"); !strings.Contains(cfg, "url = http://127.0.0.1:") {
		t.Fatalf("the clone's config names no proxy remote:\n%s", cfg)
	}
	err := filepath.WalkDir(bx.inst.HostWorkspace, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), testToken) {
			t.Errorf("the token is in the sandbox's file %s", path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	// What every process the sandbox can see was started with.
	env := bx.run(t, `for f in /proc/[0-9]*/environ; do cat "$f" 2>/dev/null; done; true`).Output
	if strings.Contains(env, testToken) {
		t.Error("the token is in the environment of a process of the sandbox")
	}
}
