package sandboxtest

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// testMCP: a stdio MCP server is a process of the sandbox, whose tools answer through the
// runtime. Its environment is what its configuration gives it (beside a small base), never
// the runtime's; it runs in the sandbox's cgroup, as the agent's commands do, so the same
// limits hold it; it is frozen while the sandbox is paused and carries on after the resume;
// and it is gone once the sandbox is destroyed.
func (s *suite) testMCP(t *testing.T) {
	command := s.opts.MCPServer
	if command == "" {
		if s.opts.Binary != "" {
			t.Skip("the runtime is not the test binary, and Options.MCPServer names no test MCP server")
		}
		// The runtime is the test binary, so the server it starts from its own executable is
		// the test server.
		command = "/proc/self/exe"
	}
	b := s.newBackend(t)
	bx := s.start(t, b, s.spec())
	// The marker names the server on the process list.
	marker := "mcp-marker-" + NewID()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	st, err := bx.client.ConfigureMCP(ctx, "conv", runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{{
		Name: "local", Transport: mcp.Stdio, Command: command, Args: []string{marker},
		Env: map[string]string{mcptest.ModeEnv: "stdio", "MCP_GIVEN": "given-value"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 1 || st.Servers[0].Error != "" || st.Servers[0].Tools == 0 {
		t.Fatalf("servers = %+v", st.Servers)
	}
	call := func(tool, args string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		res, err := bx.client.CallMCP(ctx, "conv", "local", tool, json.RawMessage(args))
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s %s = %+v, %v", tool, args, res, err)
		}
		return res.Content[0].Text
	}
	if got := call("echo", `{"text":"from the sandbox"}`); got != "from the sandbox" {
		t.Fatalf("echo = %q", got)
	}

	// The environment: what the configuration gives, not what the runtime has.
	if got := call("echo", `{"env":"MCP_GIVEN"}`); got != `MCP_GIVEN="given-value" set=true` {
		t.Errorf("the configured variable: %s", got)
	}
	for name := range s.spec().InitialEnv {
		if got := call("echo", `{"env":"`+name+`"}`); !strings.HasSuffix(got, "set=false") {
			t.Errorf("the server sees the runtime's %s: %s", name, got)
		}
	}
	if got := call("echo", `{"env":"PATH"}`); !strings.HasSuffix(got, "set=true") {
		t.Errorf("the server has no PATH: %s", got)
	}

	// The bracket keeps the pattern from matching the command lines of grep and its shell.
	pattern := strings.Replace(marker, "marker", "marke[r]", 1)
	inside := run(t, bx.client, "grep -l '"+pattern+"' /proc/[0-9]*/cmdline 2>/dev/null")
	if strings.TrimSpace(inside.Output) == "" {
		t.Fatalf("the stdio server is not among the sandbox's processes")
	}

	// The limits: the server is in the cgroup the agent's commands are in.
	if s.opts.LimitsMemory || s.opts.LimitsPIDs {
		sleeper := "sleep " + markerSeconds()
		run(t, bx.client, "("+sleeper+"; true) > /dev/null 2>&1 &")
		waitProcess(t, sleeper)
		server, command := cgroupOf(t, marker), cgroupOf(t, sleeper)
		t.Logf("the stdio server's cgroup: %q", server)
		if server == "" || server != command {
			t.Errorf("the stdio server's cgroup %q is not that of the sandbox's commands, %q", server, command)
		}
	}

	if !b.Capabilities().Freeze {
		s.mcpAcrossStop(t, b, bx, command, marker)
		return
	}

	// The freeze: the server writes down the time every 50 ms; it writes none between the
	// moment Pause returned and the moment Resume was called, and carries on after (the
	// sandbox shares the host's clock, which makes the times comparable).
	call("tick", `{"file":"mcp-ticks"}`)
	waitTickAfter(t, bx.client, "mcp-ticks", time.Now())
	if err := b.Pause(context.Background(), bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	paused := time.Now()
	time.Sleep(time.Until(paused.Add(frozenWindow)))
	resumed := time.Now()
	if err := b.Resume(context.Background(), bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	for _, tick := range waitTickAfter(t, bx.client, "mcp-ticks", resumed) {
		if tick.After(paused) && tick.Before(resumed) {
			t.Fatalf("the stdio server ticked at %s, %v after the sandbox was paused and %v before it was resumed",
				tick.Format(time.RFC3339Nano), tick.Sub(paused), resumed.Sub(tick))
		}
	}
	if got := call("echo", `{"text":"after the resume"}`); got != "after the resume" {
		t.Fatalf("echo after the resume = %q", got)
	}
	s.destroyAndCheck(t, bx, marker)
}

// cgroupOf is the cgroup, as the host sees it, of the processes whose command lines hold
// needle (a command and the shell that started it), which must all be in one.
func cgroupOf(t *testing.T, needle string) string {
	t.Helper()
	procs := processesWith(needle)
	if len(procs) == 0 {
		t.Fatalf("no process with %q", needle)
	}
	var group string
	for _, p := range procs {
		pid, _, _ := strings.Cut(p, ":")
		b, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil {
			t.Fatalf("cgroup of %s: %v", p, err)
		}
		if g := strings.TrimSpace(string(b)); group == "" {
			group = g
		} else if g != group {
			t.Fatalf("the processes with %q are in the cgroups %q and %q", needle, group, g)
		}
	}
	return group
}

// mcpAcrossStop is the end of testMCP for a backend whose pause stops the sandbox's
// processes: the server ends with the pause, and once the sandbox is resumed, the runtime
// starts it again when it is configured again (as a conversation does).
func (s *suite) mcpAcrossStop(t *testing.T, b sandbox.Backend, bx *box, command, marker string) {
	if err := b.Pause(context.Background(), bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Fatalf("the stdio server runs on in a paused sandbox that cannot freeze: %q", left)
	}
	if err := b.Resume(context.Background(), bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	waitAnswers(t, bx.client)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	st, err := bx.client.ConfigureMCP(ctx, "conv", runtimeclient.MCPConfigureRequest{Servers: []mcp.Server{{
		Name: "local", Transport: mcp.Stdio, Command: command, Args: []string{marker},
		Env: map[string]string{mcptest.ModeEnv: "stdio"},
	}}})
	if err != nil || len(st.Servers) != 1 || st.Servers[0].Error != "" {
		t.Fatalf("configure after the resume: %+v, %v", st, err)
	}
	res, err := bx.client.CallMCP(ctx, "conv", "local", "echo", json.RawMessage(`{"text":"after the resume"}`))
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "after the resume" {
		t.Fatalf("echo after the resume = %+v, %v", res, err)
	}
	s.destroyAndCheck(t, bx, marker)
}
