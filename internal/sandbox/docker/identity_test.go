package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/moby/client"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestIdentities: the container's init and the runtime are root, the runtime with only the
// capabilities it needs to start and signal its commands; every command (terminal or
// /api/command) runs as the sandbox uid and gid with no supplementary group, no capability,
// an empty bounding set and no-new-privileges, and can signal neither; what the agent writes
// to the workspace, by a command or by the file editor in the runtime, belongs to the sandbox
// uid on the host.
func TestIdentities(t *testing.T) {
	d := needEngine(t)
	b := newBackend(t, d, filepath.Join(t.TempDir(), "sandboxes"))
	ctx := context.Background()
	key := sandboxtest.NewKey()
	id := sandboxtest.NewID()
	inst := sandboxtest.StartSandbox(t, b, sandbox.StartRequest{ID: id, OwnerID: "alice", Spec: testSpec(), SessionKey: key})
	c := waitRuntime(t, inst, key)

	// The command's shell is a child of the runtime.
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: `status() { grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/$1/status | tr '\t' ' ' | sed "s/^/$2 /"; }; ` +
		`status self command; status $PPID runtime; status 1 init; ` +
		`kill -0 $PPID 2>/dev/null && echo "signalled runtime"; kill -0 1 2>/dev/null && echo "signalled init"; true`})
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprint(DefaultUID)
	none := "0000000000000000"
	want := []string{
		"command Uid: " + u + " " + u + " " + u + " " + u,
		"command Gid: " + u + " " + u + " " + u + " " + u,
		"command Groups: ",
		"command CapInh: " + none, "command CapPrm: " + none, "command CapEff: " + none,
		"command CapBnd: " + none, "command CapAmb: " + none,
		"command NoNewPrivs: 1",
		// Root, working on files as the sandbox uid.
		"runtime Uid: 0 0 0 " + u,
		"runtime Gid: 0 0 0 " + u,
		"runtime Groups: ",
		// CAP_KILL, CAP_SETGID and CAP_SETUID.
		"runtime CapEff: 00000000000000e0", "runtime CapPrm: 00000000000000e0",
		"runtime CapBnd: " + none,
		"init Uid: 0 0 0 0",
	}
	lines := strings.Split(res.Output, "\n")
	for _, w := range want {
		if !containsLine(lines, w) {
			t.Errorf("no line %q in:\n%s", w, res.Output)
		}
	}
	if strings.Contains(res.Output, "signalled") {
		t.Errorf("a command could signal the runtime or init:\n%s", res.Output)
	}

	tr, err := c.Tool(ctx, "terminal", "conv", []byte(`{"command": "id -u; id -g; echo by-terminal > by-terminal.txt"}`))
	if err != nil || tr.IsError || !strings.Contains(tr.Text, u+"\n"+u) {
		t.Errorf("the terminal's user: %q (error result %v), %v", tr.Text, tr.IsError, err)
	}
	tr, err = c.Tool(ctx, "file_editor", "conv", []byte(`{"command": "create", "path": "/workspace/by-editor/notes.txt", "file_text": "hello\n"}`))
	if err != nil || tr.IsError {
		t.Fatalf("file editor create: %q (error result %v), %v", tr.Text, tr.IsError, err)
	}
	if res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: "mkdir by-command && echo x > by-command/file"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write the workspace from a command: %+v, %v", res, err)
	}

	vol, err := d.Client.VolumeInspect(ctx, volumeName(id), client.VolumeInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"by-terminal.txt", "by-editor", "by-editor/notes.txt", "by-command", "by-command/file"} {
		fi, err := os.Stat(filepath.Join(vol.Volume.Mountpoint, p))
		if err != nil {
			t.Errorf("on the host: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != DefaultUID || st.Gid != DefaultUID {
			t.Errorf("%s belongs to %d:%d on the host, want the sandbox uid %d", p, st.Uid, st.Gid, DefaultUID)
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.TrimRight(l, " ") == strings.TrimRight(want, " ") {
			return true
		}
	}
	return false
}
