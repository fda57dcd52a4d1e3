package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

func TestCheckSpec(t *testing.T) {
	ok := sandbox.Spec{Image: "debian:12"}
	tests := []struct {
		name        string
		change      func(*sandbox.Spec)
		unsupported []string // nil: no error; empty: another error
	}{
		{"image only", func(*sandbox.Spec) {}, nil},
		{"all limits but disk", func(s *sandbox.Spec) {
			s.Limits = sandbox.Limits{MemoryBytes: 1 << 30, CPUs: 1.5, PIDs: 100}
			s.Network = sandbox.NetworkNone
			s.WorkingDir = "/home/agent/work"
		}, nil},
		{"no image", func(s *sandbox.Spec) { s.Image = "" }, []string{"a spec without an image"}},
		{"rootfs and disk", func(s *sandbox.Spec) { s.Rootfs = "/srv/rootfs"; s.Limits.DiskBytes = 1 << 30 },
			[]string{"rootfs (it runs images)", "a disk limit"}},
		{"tiny memory", func(s *sandbox.Spec) { s.Limits.MemoryBytes = 1 << 20 }, []string{"a memory limit below 6 MiB"}},
		{"unknown network", func(s *sandbox.Spec) { s.Network = "bridge" }, []string{}},
		{"relative workdir", func(s *sandbox.Spec) { s.WorkingDir = "work" }, []string{}},
		{"workdir over the run directory", func(s *sandbox.Spec) { s.WorkingDir = "/.agentd/run" }, []string{}},
		{"root as workdir", func(s *sandbox.Spec) { s.WorkingDir = "/" }, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := ok
			tt.change(&spec)
			err := checkSpec(spec)
			var ue *sandbox.UnsupportedError
			switch {
			case tt.unsupported == nil && err != nil:
				t.Fatalf("checkSpec: %v, want nil", err)
			case tt.unsupported == nil:
			case len(tt.unsupported) == 0 && (err == nil || errors.As(err, &ue)):
				t.Fatalf("checkSpec: %v, want an error that is not UnsupportedError", err)
			case len(tt.unsupported) > 0 && !errors.As(err, &ue):
				t.Fatalf("checkSpec: %v, want UnsupportedError", err)
			case len(tt.unsupported) > 0 && !slices.Equal(ue.What, tt.unsupported):
				t.Fatalf("unsupported %q, want %q", ue.What, tt.unsupported)
			}
		})
	}
}

func TestNewRefusesDynamicBinary(t *testing.T) {
	bash, err := lookBash()
	if err != nil {
		t.Skip(err)
	}
	_, err = New(Options{Root: t.TempDir(), Binary: bash})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("New with a dynamically linked binary: %v", err)
	}
}

func lookBash() (string, error) {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash"} {
		if _, err := os.Stat(p); err == nil {
			return filepath.EvalSymlinks(p)
		}
	}
	return "", errors.New("no bash on this machine")
}

// TestContainerSettings starts a sandbox with every limit and checks the container the engine
// made: labels, limits, network, mounts, user, no published port, and that the session key is
// neither in its configuration nor left in its run directory.
func TestContainerSettings(t *testing.T) {
	d := needEngine(t)
	root := filepath.Join(t.TempDir(), "sandboxes")
	b := newBackend(t, d, root)
	ctx := context.Background()
	spec := testSpec()
	spec.Network = sandbox.NetworkNone
	spec.Limits = sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1.5, PIDs: 200}
	spec.WorkingDir = "/home/agent/work/"
	spec.InitialEnv["GREETING"] = "hello"
	id, key := sandboxtest.NewID(), sandboxtest.NewKey()
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: id, OwnerID: "alice", Spec: spec, SessionKey: key})
	if inst.Workspace != "/home/agent/work" || inst.HostWorkspace != "" {
		t.Errorf("workspace %q, host workspace %q", inst.Workspace, inst.HostWorkspace)
	}
	c := waitRuntime(t, inst, key)
	if res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "pwd; id -u; id -g; echo $GREETING; ls -A /.agentd/run 2>/dev/null || echo closed"}); err != nil ||
		res.Output != fmt.Sprintf("/home/agent/work\n%d\n%[1]d\nhello\nclosed\n", DefaultUID) {
		t.Errorf("pwd, user, environment and run directory in the sandbox: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(root, id, "key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the key file is left on the host: %v", err)
	}

	st, err := decodeState(inst)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Client.ContainerInspect(ctx, st.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := res.Container
	if strings.Contains(string(res.Raw), key) {
		t.Error("the session key is in the container's configuration")
	}
	want := map[string]string{labelManaged: "true", labelSandbox: id, labelOwner: "alice", labelInstance: b.instance}
	for k, v := range want {
		if ct.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, ct.Config.Labels[k], v)
		}
	}
	hc := ct.HostConfig
	if hc.Memory != 512<<20 || hc.MemorySwap != 512<<20 || hc.NanoCPUs != 1_500_000_000 || hc.PidsLimit == nil || *hc.PidsLimit != 200 {
		t.Errorf("limits: memory %d, swap %d, nano CPUs %d, pids %v", hc.Memory, hc.MemorySwap, hc.NanoCPUs, hc.PidsLimit)
	}
	if hc.CPUShares != 102 {
		t.Errorf("CPU shares %d, want a tenth of the default (102)", hc.CPUShares)
	}
	if hc.NetworkMode != "none" || len(hc.PortBindings) > 0 || hc.PublishAllPorts {
		t.Errorf("network %q, port bindings %v, publish all %v", hc.NetworkMode, hc.PortBindings, hc.PublishAllPorts)
	}
	if ct.Config.User != "0:0" || hc.Init == nil || !*hc.Init || hc.Privileged ||
		!slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(slices.Sorted(slices.Values(hc.CapAdd)), slices.Sorted(slices.Values(runtimeCaps))) ||
		!slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("user %q, init %v, privileged %v, dropped capabilities %v, added %v, security options %v",
			ct.Config.User, hc.Init, hc.Privileged, hc.CapDrop, hc.CapAdd, hc.SecurityOpt)
	}
	mounts := map[string]string{}
	for _, m := range ct.Mounts {
		mounts[m.Destination] = string(m.Type) + " " + m.Name + m.Source + " rw=" + map[bool]string{true: "yes", false: "no"}[m.RW]
	}
	wantMounts := map[string]string{
		binaryInContainer:  "bind " + engine.binary + " rw=no",
		runInContainer:     "bind " + filepath.Join(root, id) + " rw=yes",
		"/home/agent/work": "volume " + volumeName(id),
	}
	for dst, w := range wantMounts {
		if got := mounts[dst]; !strings.HasPrefix(got, w) {
			t.Errorf("mount at %s: %q, want %q…", dst, got, w)
		}
	}
	if len(ct.Mounts) != len(wantMounts) {
		t.Errorf("mounts: %v, want only %v", mounts, wantMounts)
	}
}

// waitRuntime waits until the runtime of inst answers with key.
func waitRuntime(t *testing.T, inst sandbox.Instance, key string) *runtimeclient.Client {
	t.Helper()
	c, err := runtimeclient.NewClient(inst.Endpoint, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	for {
		if _, err := c.Identity(ctx); err == nil {
			return c
		} else if ctx.Err() != nil {
			t.Fatalf("runtime of %s did not answer within %v: %v", inst.ID, readyWait, err)
		}
		sleep(ctx)
	}
}

// TestTools: the runtime's terminal (bash on a pty) and file editor work in the test image,
// which has nothing but what they and the suite need.
func TestTools(t *testing.T) {
	d := needEngine(t)
	b := newBackend(t, d, filepath.Join(t.TempDir(), "sandboxes"))
	ctx := context.Background()
	key := sandboxtest.NewKey()
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: sandboxtest.NewID(), OwnerID: "alice", Spec: testSpec(), SessionKey: key})
	c := waitRuntime(t, inst, key)
	res, err := c.Tool(ctx, "terminal", "conv", []byte(`{"command": "cd /workspace && echo from-$((6*7)) && tty"}`))
	if err != nil || res.IsError || !strings.Contains(res.Text, "from-42") || !strings.Contains(res.Text, "/dev/pts/") {
		t.Fatalf("terminal: %q (error result %v), %v", res.Text, res.IsError, err)
	}
	res, err = c.Tool(ctx, "file_editor", "conv", []byte(`{"command": "create", "path": "/workspace/notes.txt", "file_text": "hello\n"}`))
	if err != nil || res.IsError {
		t.Fatalf("file editor create: %q (error result %v), %v", res.Text, res.IsError, err)
	}
	if out, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "cat /workspace/notes.txt"}); err != nil || out.Output != "hello\n" {
		t.Fatalf("file written by the editor: %+v, %v", out, err)
	}
}
