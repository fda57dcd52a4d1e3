package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/tool/mcp/mcptest"
)

// TestMCPToolsInConversation: a V1 conversation with a stdio server (started by the sandbox's
// runtime), a streamable-HTTP server that wants an API key, and a server that crashes on
// start: the model calls a tool of each working server and reads their answers (a call past
// the HTTP server's timeout as an error), and an
// event names the crashed server and says why.
func TestMCPToolsInConversation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, shttp := mcptest.HTTP(t, "mcp-key-0301")
	e.scripted(alice,
		llmtest.Calls(llmtest.Call("local_echo", `{"text":"hello from stdio"}`)),
		llmtest.Calls(llmtest.Call("127_0_0_1_echo", `{"text":"hello over http"}`)),
		llmtest.Calls(llmtest.Call("127_0_0_1_hang", `{}`)),
		llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)),
	)
	self := func(name, mode string) map[string]any {
		return map[string]any{"name": name, "command": "/proc/self/exe", "env": map[string]any{mcptest.ModeEnv: mode}}
	}
	var task v1Task
	e.must("POST", "/api/v1/app-conversations", alice, map[string]any{
		"initial_message": message("use the tools", true),
		"mcp_config": map[string]any{
			"stdio_servers": []any{self("local", "stdio"), self("broken", "crash")},
			"shttp_servers": []any{map[string]any{"url": shttp, "api_key": "mcp-key-0301", "timeout": 1}},
		},
	}, 200, &task)
	ready := e.waitTask(alice, task.ID, "READY")
	conv := e.getConversation(alice, *ready.AppConversationID)
	c := &agentConv{e: e, key: alice, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	t.Cleanup(func() {
		if t.Failed() {
			for _, ev := range c.events() {
				t.Logf("event %s %s %s", ev.label(), ev.Detail, observationText(ev))
			}
		}
	})
	c.waitStatus("finished")

	var texts []string
	broken := ""
	for _, ev := range c.events() {
		switch ev.Kind {
		case "ObservationEvent":
			texts = append(texts, observationText(ev))
		case "MCPServerErrorEvent":
			broken += ev.Detail
		}
	}
	all := strings.Join(texts, "\n---\n")
	for _, want := range []string{"hello from stdio", "hello over http", "timed out"} {
		if !strings.Contains(all, want) {
			t.Errorf("no observation says %q; observations:\n%s", want, all)
		}
	}
	if !strings.Contains(broken, "crashing on purpose") {
		t.Errorf("no event says why the broken server is missing (detail %q)", broken)
	}
}

// TestV1StartValidatesMCP: the V1 start request's mcp_config follows the V0 rules, with the
// location of each problem.
func TestV1StartValidatesMCP(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	for _, tt := range []struct {
		name string
		cfg  map[string]any
		loc  string
	}{
		{"url without scheme", map[string]any{"sse_servers": []any{"example.com"}}, `["body","mcp_config","sse_servers",0,"url"]`},
		{"ftp url", map[string]any{"shttp_servers": []any{"ftp://example.com"}}, `["body","mcp_config","shttp_servers",0,"url"]`},
		{"timeout", map[string]any{"shttp_servers": []any{map[string]any{"url": "http://a.example", "timeout": 3601}}}, `["body","mcp_config","shttp_servers",0,"timeout"]`},
		{"name", map[string]any{"stdio_servers": []any{map[string]any{"name": "a b", "command": "x"}}}, `["body","mcp_config","stdio_servers",0,"name"]`},
		{"command with space", map[string]any{"stdio_servers": []any{map[string]any{"name": "a", "command": "npx foo"}}}, `["body","mcp_config","stdio_servers",0,"command"]`},
		{"env name", map[string]any{"stdio_servers": []any{map[string]any{"name": "a", "command": "x", "env": map[string]any{"1X": "v"}}}}, `["body","mcp_config","stdio_servers",0,"env"]`},
		{"same name twice", map[string]any{"stdio_servers": []any{map[string]any{"name": "a", "command": "x"}, map[string]any{"name": "a", "command": "y"}}}, `["body","mcp_config","stdio_servers",1,"name"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"mcp_config": tt.cfg})
			if status != 422 || !strings.Contains(string(body), tt.loc) {
				t.Errorf("answer %d %s; want 422 at %s", status, body, tt.loc)
			}
		})
	}
}

// TestMCPToolsChange: a tool a server adds while the conversation runs (it says so with
// list_changed) is offered to the model before a later call, and the model can call it; the
// server's calls are bounded by the server's mcp-call-timeout setting.
func TestMCPToolsChange(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.MCPCallTimeout = 2 * time.Second })
	_, alice := e.newUser("alice")
	var calledLate atomic.Bool
	var waits atomic.Int32
	// The notification comes on its own after add_tool answers: until the model is offered
	// the tool, it thinks, each time in other words (the same thought four times in a row is
	// a loop the stuck detector ends); the steps are a bound that ends a test that would
	// never pass.
	waitForLate := llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		switch {
		case calledLate.Load():
			return llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`))
		case slices.ContainsFunc(req.Tools, func(tl llm.ToolSpec) bool { return tl.Name == "late_tool" }):
			calledLate.Store(true)
			return llmtest.Calls(llmtest.Call("late_tool", `{}`))
		}
		return llmtest.Calls(llmtest.Call("think", fmt.Sprintf(`{"thought":"waiting for the new tool (%d)"}`, waits.Add(1))))
	}}
	steps := []llmtest.Step{
		llmtest.Calls(llmtest.Call("hang", `{}`)),
		llmtest.Calls(llmtest.Call("add_tool", `{"name":"late_tool"}`)),
	}
	for range 50 {
		steps = append(steps, waitForLate)
	}
	model := e.scripted(alice, steps...)
	c := e.startAgent(alice, map[string]any{
		"initial_message": message("use the tools", true),
		"mcp_config": map[string]any{"stdio_servers": []any{
			map[string]any{"name": "local", "command": "/proc/self/exe", "env": map[string]any{mcptest.ModeEnv: "stdio"}},
		}},
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, ev := range c.events() {
				t.Logf("event %s %s %s", ev.label(), ev.Detail, observationText(ev))
			}
		}
	})
	c.waitStatus("finished")
	if !calledLate.Load() {
		t.Fatalf("the model was never offered late_tool in %d calls", len(model.Requests()))
	}
	var texts []string
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" {
			texts = append(texts, ev.ToolName+": "+observationText(ev))
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"hang: ", "timed out", "late_tool: ", "late"} {
		if !strings.Contains(all, want) {
			t.Errorf("no observation says %q; observations:\n%s", want, all)
		}
	}
	if first := model.Requests()[0]; slices.ContainsFunc(first.Tools, func(tl llm.ToolSpec) bool { return tl.Name == "late_tool" }) {
		t.Error("late_tool was offered before the server added it")
	}
}

// TestMCPServersOfMicroagents: a repository microagent that declares MCP servers
// (mcp_tools) gives the conversation their tools beside those of the request; a knowledge
// microagent's servers are not started.
func TestMCPServersOfMicroagents(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	model := e.scripted(alice,
		llmtest.Calls(llmtest.Call("repo_echo", `{"text":"from the microagent's server"}`)),
		llmtest.Calls(llmtest.Call("mine_echo", `{"text":"from the request's server"}`)),
		llmtest.Text("Both answered."),
	)
	sb := e.runningSandbox(alice)
	e.writeProject(alice, sb, map[string]string{
		".openhands/microagents/tools.md": "---\nname: tools\nmcp_tools:\n  stdio_servers:\n    - name: repo\n" +
			"      command: /proc/self/exe\n      env: {" + mcptest.ModeEnv + ": stdio}\n---\nThe repository's tools.",
		".openhands/microagents/later.md": "---\nname: later\ntriggers: [never-said]\nmcp_tools:\n  mcpServers:\n" +
			"    knowledge: {command: /proc/self/exe, env: {" + mcptest.ModeEnv + ": stdio}}\n---\nNot yet.",
	})
	c := e.startAgent(alice, map[string]any{
		"sandbox_id":      sb,
		"initial_message": message("use the tools", true),
		"mcp_config": map[string]any{"stdio_servers": []any{
			map[string]any{"name": "mine", "command": "/proc/self/exe", "env": map[string]any{mcptest.ModeEnv: "stdio"}},
		}},
	})
	c.waitStatus("finished")
	var texts []string
	for _, ev := range c.events() {
		if ev.Kind == "ObservationEvent" {
			texts = append(texts, observationText(ev))
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"from the microagent's server", "from the request's server"} {
		if !strings.Contains(all, want) {
			t.Errorf("no observation says %q; observations:\n%s", want, all)
		}
	}
	for _, tl := range model.Requests()[0].Tools {
		if strings.HasPrefix(tl.Name, "knowledge_") {
			t.Errorf("the knowledge microagent's server was started: tool %s offered", tl.Name)
		}
	}
}
