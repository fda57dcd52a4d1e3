package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm/llmtest"
)

// sdkStartBody is the body OpenHands' SDK posts to its agent server's /api/conversations
// (RemoteConversation without a conversation id): the agent dumped whole, with the LLM the
// cloud workspace built from users/me?expose_secrets=true, and the defaults it sends.
func sdkStartBody(model string, apiKey, baseURL any) map[string]any {
	return map[string]any{
		"agent": map[string]any{
			"kind": "Agent",
			"llm": map[string]any{"model": model, "api_key": apiKey, "base_url": baseURL, "usage_id": "default",
				"temperature": 0.0, "num_retries": 5, "log_completions": false, "extra_headers": nil},
			"tools":                  []any{map[string]any{"name": "terminal", "params": map[string]any{}}, map[string]any{"name": "file_editor", "params": map[string]any{}}, map[string]any{"name": "task_tracker", "params": map[string]any{}}},
			"mcp_config":             map[string]any{},
			"filter_tools_regex":     nil,
			"include_default_tools":  []any{"FinishTool", "ThinkTool"},
			"agent_context":          nil,
			"system_prompt_filename": "system_prompt.j2",
			"system_prompt_kwargs":   map[string]any{"cli_mode": true},
			"condenser":              nil,
		},
		"initial_message":       nil,
		"max_iterations":        500,
		"stuck_detection":       true,
		"workspace":             map[string]any{"kind": "LocalWorkspace", "working_dir": "/workspace/project"},
		"tool_module_qualnames": map[string]any{"terminal": "openhands.tools.terminal.definition", "file_editor": "openhands.tools.file_editor.definition"},
		"agent_definitions":     []any{},
		"plugins":               nil,
		"hook_config":           nil,
		"tags":                  map[string]any{},
	}
}

// TestAgentServerStartsConversation follows OpenHands' SDK starting a conversation in a
// sandbox it holds, as its cloud workspace does: it reads the user's LLM from
// users/me?expose_secrets=true, posts its agent to the sandbox's agent server
// (POST {host}/api/conversations with the session key), and drives the conversation it gets at
// the id of the answer. Posting the id again attaches to it; what agentd cannot honour is a
// 422 saying where, that starts nothing and quotes no key.
func TestAgentServerStartsConversation(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	const secretPlain = "sdk-start-SECRET-0401"
	srv := e.scripted(alice,
		llmtest.Text("Hello from the sandbox."),
		terminal(t, printSecret("START_SECRET")),
		llmtest.Text("Done."),
	)
	sandboxID := e.runningSandbox(alice)
	sb := e.getSandbox(alice, sandboxID)
	if sb == nil || sb.SessionAPIKey == nil {
		t.Fatalf("the sandbox: %+v", sb)
	}
	host, session := e.agentSrv.URL, *sb.SessionAPIKey

	// What the cloud workspace builds its LLM from.
	var me struct {
		LLMModel   *string `json:"llm_model"`
		LLMAPIKey  *string `json:"llm_api_key"`
		LLMBaseURL *string `json:"llm_base_url"`
	}
	st, b := e.callAt("GET", e.srv.URL+"/api/v1/users/me?expose_secrets=true", http.Header{
		"Authorization": {"Bearer " + alice}, "X-Session-API-Key": {session}}, nil)
	if err := json.Unmarshal(b, &me); st != http.StatusOK || err != nil || me.LLMModel == nil || me.LLMAPIKey == nil || me.LLMBaseURL == nil {
		t.Fatalf("users/me: %d %s", st, b)
	}
	post := e.postJSONAt
	withSession := http.Header{"X-Session-API-Key": {session}}
	count := func() string {
		_, b := e.call("GET", "/api/v1/app-conversations/count", alice, nil)
		return string(b)
	}

	// Refusals first: each says where, quotes no key, and starts nothing.
	before := count()
	for _, tc := range []struct {
		name   string
		change func(body map[string]any)
		loc    string
	}{
		{"another API key", func(b map[string]any) { llmOf(b)["api_key"] = "sk-not-alices-key-0402" }, `["body","agent","llm","api_key"]`},
		{"another base URL", func(b map[string]any) { llmOf(b)["base_url"] = "https://llm.example/v1" }, `["body","agent","llm","base_url"]`},
		{"a tool agentd lacks", func(b map[string]any) {
			agentOf(b)["tools"] = []any{map[string]any{"name": "terminal"}, map[string]any{"name": "browser_tool_set"}}
		}, `["body","agent","tools",1,"name"]`},
		{"MCP servers", func(b map[string]any) {
			agentOf(b)["mcp_config"] = map[string]any{"mcpServers": map[string]any{"fetch": map[string]any{"command": "uvx"}}}
		}, `["body","agent","mcp_config"]`},
		{"an ACP agent", func(b map[string]any) { agentOf(b)["kind"] = "ACPAgent" }, `["body","agent","kind"]`},
		{"agent settings instead", func(b map[string]any) {
			delete(b, "agent")
			b["agent_settings"] = map[string]any{"llm": map[string]any{}}
		}, `["body","agent"]`},
		{"hooks", func(b map[string]any) { b["hook_config"] = map[string]any{"pre_tool_use": []any{}} }, `["body","hook_config"]`},
		{"plugins", func(b map[string]any) { b["plugins"] = []any{map[string]any{"source": "github:o/r"}} }, `["body","plugins"]`},
		{"a worktree", func(b map[string]any) { b["worktree"] = true }, `["body","worktree"]`},
		{"a model name too long", func(b map[string]any) { llmOf(b)["model"] = strings.Repeat("m", 501) }, `["body","agent","llm","model"]`},
		{"a tag too long", func(b map[string]any) { b["tags"] = map[string]any{"k": strings.Repeat("v", 257)} }, `["body","tags","k"]`},
		{"too many tags", func(b map[string]any) { b["tags"] = manyTags(51) }, `["body","tags"]`},
		{"no workspace", func(b map[string]any) { delete(b, "workspace") }, `["body","workspace"]`},
		{"a malformed id", func(b map[string]any) { b["conversation_id"] = "not-a-uuid" }, `["body","conversation_id"]`},
		{"a lookup of a secret the sandbox was not given", func(b map[string]any) {
			b["secrets"] = map[string]any{"X": map[string]any{"kind": "LookupSecret", "url": host + "/api/settings/secrets/NOT_GIVEN"}}
		}, `["body","secrets"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := sdkStartBody(*me.LLMModel, *me.LLMAPIKey, *me.LLMBaseURL)
			tc.change(body)
			answer := post(t, host+"/api/conversations", withSession, body, http.StatusUnprocessableEntity)
			if !strings.Contains(string(answer), `"loc":`+tc.loc) {
				t.Fatalf("%s, want a problem at %s", answer, tc.loc)
			}
			if strings.Contains(string(answer), "sk-not-alices-key-0402") || strings.Contains(string(answer), *me.LLMAPIKey) {
				t.Fatalf("the answer quotes a key: %s", answer)
			}
		})
	}
	// The base needs the session key to know the sandbox; another user's key finds none.
	body := sdkStartBody(*me.LLMModel, *me.LLMAPIKey, *me.LLMBaseURL)
	post(t, host+"/api/conversations", http.Header{"Authorization": {"Bearer " + alice}}, body, http.StatusBadRequest)
	post(t, e.srv.URL+"/agent-server/"+sandboxID+"/api/conversations", http.Header{"X-Session-API-Key": {bob}}, body, http.StatusNotFound)
	if after := count(); after != before {
		t.Fatalf("refused starts left conversations: %s, then %s", before, after)
	}

	// As the SDK starts one, with a secret, and then drives it.
	body["secrets"] = map[string]any{"START_SECRET": secretPlain}
	var info struct {
		ID              string `json:"id"`
		ExecutionStatus string `json:"execution_status"`
		Agent           struct {
			LLM struct {
				Model string `json:"model"`
			} `json:"llm"`
		} `json:"agent"`
		Workspace struct {
			WorkingDir string `json:"working_dir"`
		} `json:"workspace"`
	}
	answer := post(t, host+"/api/conversations", withSession, body, http.StatusCreated)
	if err := json.Unmarshal(answer, &info); err != nil || len(info.ID) != 36 || info.Agent.LLM.Model != *me.LLMModel || info.Workspace.WorkingDir == "" {
		t.Fatalf("the answer: %s", answer)
	}
	if strings.Contains(string(answer), secretPlain) || strings.Contains(string(answer), *me.LLMAPIKey) {
		t.Fatalf("the answer holds a secret: %s", answer)
	}
	c := &agentConv{e: e, key: alice, id: strings.ReplaceAll(info.ID, "-", ""), sandboxID: sandboxID,
		url: host + "/api/conversations/" + info.ID, sessionKey: session}
	if got := c.info(); got.ID != info.ID {
		t.Fatalf("GET the conversation: %+v", got)
	}
	// send_message, then run(), which takes a 409 (a run under way) as success and waits.
	c.api("POST", "/events", message("hi", false), http.StatusOK, nil)
	c.runAsSDK()
	c.waitStatus("finished")
	c.api("POST", "/events", message("use the secret", true), http.StatusOK, nil)
	c.waitStatus("finished")
	if out := observationText(lastObservation(c.events())); !strings.Contains(out, sha256Hex(secretPlain)) || strings.Contains(out, secretPlain) {
		t.Fatalf("the command printed %s", out)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}

	// The same id again attaches: 200, the conversation as it is, nothing new.
	body["conversation_id"] = info.ID
	var again struct {
		ID              string `json:"id"`
		ExecutionStatus string `json:"execution_status"`
	}
	if err := json.Unmarshal(post(t, host+"/api/conversations", withSession, body, http.StatusOK), &again); err != nil ||
		again.ID != info.ID || again.ExecutionStatus != "finished" {
		t.Fatalf("attaching again: %+v %v", again, err)
	}
	// An id of a conversation in another of the caller's sandboxes is taken.
	other := e.startAgent(alice, map[string]any{})
	body["conversation_id"] = dashed(other.id)
	post(t, host+"/api/conversations", withSession, body, http.StatusConflict)
}

// TestAgentServerStartRunsInitialMessage: a start request's initial message is answered at
// once, as an agent server runs it whatever its run flag says; the conversation starts with
// the confirmation policy asked for.
func TestAgentServerStartRunsInitialMessage(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	e.scripted(alice, llmtest.Text("Answered at once."))
	sandboxID := e.runningSandbox(alice)
	session := *e.getSandbox(alice, sandboxID).SessionAPIKey
	body := sdkStartBody("gpt-4o", nil, nil)
	body["initial_message"] = message("start right away", false)
	body["confirmation_policy"] = map[string]any{"kind": "AlwaysConfirm"}
	answer := e.postJSONAt(t, e.agentSrv.URL+"/api/conversations", http.Header{"X-Session-API-Key": {session}}, body, http.StatusCreated)
	var info struct {
		ID                 string `json:"id"`
		ConfirmationPolicy struct {
			Kind string `json:"kind"`
		} `json:"confirmation_policy"`
	}
	if err := json.Unmarshal(answer, &info); err != nil || info.ConfirmationPolicy.Kind != "AlwaysConfirm" {
		t.Fatalf("start: %s", answer)
	}
	c := &agentConv{e: e, key: alice, id: strings.ReplaceAll(info.ID, "-", ""), sandboxID: sandboxID,
		url: e.agentSrv.URL + "/api/conversations/" + info.ID, sessionKey: session}
	c.waitStatus("finished")
	var texts []string
	for _, ev := range c.events() {
		if ev.Kind == "MessageEvent" && len(ev.LLMMessage.Content) > 0 {
			texts = append(texts, ev.LLMMessage.Content[0].Text)
		}
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "start right away") || !strings.Contains(texts[1], "Answered at once.") {
		t.Fatalf("the messages: %v", texts)
	}
}

func agentOf(body map[string]any) map[string]any { return body["agent"].(map[string]any) }

func llmOf(body map[string]any) map[string]any { return agentOf(body)["llm"].(map[string]any) }
