package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// scripted starts a scripted OpenAI-compatible model and points the user's settings at it.
func (e *env) scripted(key string, steps ...llmtest.Step) *llmtest.Server {
	e.t.Helper()
	srv := llmtest.NewOpenAI(e.t, steps...)
	e.must("POST", "/api/settings", key, map[string]any{
		"llm_model": "gpt-4o", "llm_base_url": srv.URL(), "llm_api_key": llmtest.APIKey,
	}, http.StatusOK, nil)
	return srv
}

// agentConv is a conversation as the agent tests follow it.
type agentConv struct {
	e               *env
	key             string // the owner's API key
	id, sandboxID   string
	url, sessionKey string // conversation_url and session_api_key
}

// in returns the view of the conversation for t, a subtest: its failures are t's.
func (c *agentConv) in(t *testing.T) *agentConv {
	v := *c
	v.e = c.e.in(t)
	return &v
}

// startAgent starts a V1 conversation with a first message and waits until it is READY.
func (e *env) startAgent(key string, body map[string]any) *agentConv {
	e.t.Helper()
	var task struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/app-conversations", key, body, http.StatusOK, &task)
	return e.startedConv(key, e.waitTaskReady(key, task.ID))
}

// startedConv is the READY conversation id as the agent tests follow it.
func (e *env) startedConv(key, id string) *agentConv {
	e.t.Helper()
	conv := e.getConversation(key, id)
	if conv == nil || conv.ConversationURL == nil || conv.SessionAPIKey == nil {
		e.t.Fatalf("READY conversation without its URL or key: %+v", conv)
	}
	return &agentConv{e: e, key: key, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
}

// message is a V1 initial message / send message body.
func message(text string, run bool, images ...string) map[string]any {
	content := []any{map[string]any{"type": "text", "text": text}}
	if len(images) > 0 {
		content = append(content, map[string]any{"type": "image", "image_urls": images})
	}
	return map[string]any{"role": "user", "content": content, "run": run}
}

// runAsSDK asks the conversation's agent to run as OpenHands' SDK does: a 409 (a run under
// way) is success too, the SDK then waits for the run in flight.
func (c *agentConv) runAsSDK() {
	c.e.t.Helper()
	u := c.e.srv.URL + c.path("/run")
	if c.e.agentSrv != nil && strings.HasPrefix(c.url, c.e.agentSrv.URL+"/") {
		u = c.url + "/run"
	}
	if st, b := c.e.callAt("POST", u, http.Header{"X-Session-API-Key": {c.sessionKey}}, nil); st != http.StatusOK && st != http.StatusConflict {
		c.e.t.Fatalf("run: %d %s", st, b)
	}
}

// path turns the conversation's URL into a path on the test server (the public URL of the
// configuration is not the test server's address).
func (c *agentConv) path(suffix string) string {
	u, err := url.Parse(c.url)
	if err != nil {
		c.e.t.Fatal(err)
	}
	return u.Path + suffix
}

// api calls the conversation API with the sandbox's session key, where conversation_url
// leads: the agent-server base when the env serves one, else the main server's prefix.
func (c *agentConv) api(method, suffix string, body any, want int, out any) []byte {
	c.e.t.Helper()
	if c.e.agentSrv == nil || !strings.HasPrefix(c.url, c.e.agentSrv.URL+"/") {
		return c.e.must(method, c.path(suffix), c.sessionKey, body, want, out)
	}
	var r io.Reader
	header := http.Header{"X-Session-API-Key": {c.sessionKey}}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.e.t.Fatal(err)
		}
		r, header["Content-Type"] = bytes.NewReader(b), []string{"application/json"}
	}
	status, data := c.e.callAt(method, c.url+suffix, header, r)
	if status != want {
		c.e.t.Fatalf("%s %s: status %d, want %d; body %s", method, c.url+suffix, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.e.t.Fatalf("%s %s: decode %s: %v", method, c.url+suffix, data, err)
		}
	}
	return data
}

// info is the conversation API's view of the conversation.
type agentInfo struct {
	ID              string          `json:"id"`
	ExecutionStatus string          `json:"execution_status"`
	Metrics         json.RawMessage `json:"metrics"`
	Agent           struct {
		LLM struct {
			Model string `json:"model"`
		} `json:"llm"`
	} `json:"agent"`
}

func (c *agentConv) info() agentInfo {
	c.e.t.Helper()
	var info agentInfo
	c.api("GET", "", nil, http.StatusOK, &info)
	return info
}

// waitStatus waits until the agent's execution status is one of want and returns it.
func (c *agentConv) waitStatus(want ...string) string {
	c.e.t.Helper()
	var got string
	c.e.eventually("execution status "+strings.Join(want, " or "), func() bool {
		got = c.info().ExecutionStatus
		for _, w := range want {
			if got == w {
				return true
			}
		}
		return false
	}, func() string { return "it is " + got })
	return got
}

// wireEvent is an event as clients read it.
type wireEvent struct {
	Kind        string          `json:"kind"`
	ID          string          `json:"id"`
	Timestamp   string          `json:"timestamp"`
	Source      string          `json:"source"`
	ToolName    string          `json:"tool_name"`
	ToolCallID  string          `json:"tool_call_id"`
	ActionID    string          `json:"action_id"`
	Action      json.RawMessage `json:"action"`
	Observation json.RawMessage `json:"observation"`
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	Code        string          `json:"code"`
	Detail      string          `json:"detail"`
	Error       string          `json:"error"`
	LLMMessage  struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"llm_message"`
}

// label is a short name of an event for comparing logs: kind, tool or source, state.
func (ev wireEvent) label() string {
	switch ev.Kind {
	case "ActionEvent", "ObservationEvent":
		return ev.Kind + ":" + ev.ToolName
	case "MessageEvent":
		return ev.Kind + ":" + ev.Source
	case "ConversationStateUpdateEvent":
		return ev.Key + "=" + strings.Trim(string(ev.Value), `"`)
	case "ConversationErrorEvent":
		return ev.Kind + ":" + ev.Code
	}
	return ev.Kind
}

// events reads the whole log through the conversation API, a few events per page.
func (c *agentConv) events() []wireEvent {
	c.e.t.Helper()
	var all []wireEvent
	page := ""
	for {
		var p struct {
			Items      []wireEvent `json:"items"`
			NextPageID *string     `json:"next_page_id"`
		}
		c.api("GET", "/events/search?limit=7&page_id="+url.QueryEscape(page), nil, http.StatusOK, &p)
		all = append(all, p.Items...)
		if p.NextPageID == nil {
			return all
		}
		page = *p.NextPageID
	}
}

// labels are the events' labels, without the usage statistics.
// statusKeys are the state updates that are not the agent's.
var statusKeys = map[string]bool{"stats": true, "start_task": true, "sandbox_status": true, "conversation_status": true}

// agentEvents leaves out of evs the state updates that are not the agent's.
func agentEvents(evs []wireEvent) []wireEvent {
	var out []wireEvent
	for _, ev := range evs {
		if !statusKeys[ev.Key] {
			out = append(out, ev)
		}
	}
	return out
}

// labels are the labels of the agent's events: the usage statistics and the status of the
// conversation's start and sandbox are left out.
func labels(evs []wireEvent) []string {
	var out []string
	for _, ev := range evs {
		if statusKeys[ev.Key] {
			continue
		}
		out = append(out, ev.label())
	}
	return out
}

func wantLabels(t *testing.T, evs []wireEvent, want ...string) {
	t.Helper()
	got := labels(evs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("event log:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// observationText is the content text of an observation event.
func observationText(ev wireEvent) string {
	var o struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(ev.Observation, &o)
	var s []string
	for _, c := range o.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "")
}

var workspaceInPrompt = regexp.MustCompile(`a workspace directory at (\S+)\. `)

// workspaceOf reads the workspace path the system prompt names.
func workspaceOf(t *testing.T, req llmtest.RecordedRequest) string {
	m := workspaceInPrompt.FindStringSubmatch(req.System)
	if m == nil {
		t.Errorf("the system prompt names no workspace: %.200s", req.System)
		return "/nowhere"
	}
	return m[1]
}

// callIn returns a step that calls a tool with arguments made from the workspace path.
func callIn(t *testing.T, name string, args func(ws string) map[string]any) llmtest.Step {
	return llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		b, _ := json.Marshal(args(workspaceOf(t, req)))
		return llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: name, Arguments: string(b)}},
			Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 50}}}
	}}
}

// terminal returns a step that runs a command.
func terminal(t *testing.T, cmd string) llmtest.Step {
	return callIn(t, "terminal", func(string) map[string]any { return map[string]any{"command": cmd} })
}

// toolResults returns the tool messages of a request.
func toolResults(req llmtest.RecordedRequest) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Text())
		}
	}
	return out
}
