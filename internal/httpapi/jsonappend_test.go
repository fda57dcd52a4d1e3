package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
)

// TestAppendJSONStringIsEncodingJSONs: appendJSONString writes what encoding/json writes
// without HTML escaping, for strings with every kind of character it escapes, and random bytes.
func TestAppendJSONStringIsEncodingJSONs(t *testing.T) {
	cases := []string{"", "plain", `quote " and \ backslash`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<html> & 'apos'",
		"é ü 中文 🎉", "\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "end\\"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		var got, want bytes.Buffer
		appendJSONString(&got, s)
		if err := appendJSON(&want, s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%q: wrote %s, encoding/json writes %s", s, got.Bytes(), want.Bytes())
		}
	}
}

// TestAppendStartTaskIsEncodingJSONs: a task as the listings write it is the bytes
// encoding/json writes for its apitypes form, with the request moved last.
func TestAppendStartTaskIsEncodingJSONs(t *testing.T) {
	a := &API{}
	at := time.Date(2025, 3, 1, 12, 30, 45, 123456789, time.UTC)
	for _, task := range []conversation.StartTask{
		{ID: "t1", OwnerID: "u1", Status: conversation.TaskWorking, CreatedAt: at, UpdatedAt: at},
		{ID: "t2", OwnerID: "u\"2", Status: conversation.TaskError, Detail: "failed:\n<line>\u2028", ConversationID: "c2",
			Request: json.RawMessage(`{"initial_message":null}`), CreatedAt: at, UpdatedAt: at.Add(time.Second)},
		{ID: "t3", OwnerID: "u3", Status: conversation.TaskReady, ConversationID: "c3", SandboxID: "sb3", AgentServerURL: "http://127.0.0.1:1/x?y=1&z=2",
			Request: json.RawMessage(`{"a":1}`), CreatedAt: at.In(time.FixedZone("x", 3600)), UpdatedAt: time.Unix(0, 0).UTC()},
	} {
		var got bytes.Buffer
		a.appendStartTask(&got, task)
		want := referenceStartTask(a, task)
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("task %s: wrote\n%s\nencoding/json writes\n%s", task.ID, got.Bytes(), want)
		}
	}
}

// TestAppendSandboxIsEncodingJSONs: a sandbox as the listings write it is the bytes
// encoding/json writes for its apitypes form.
func TestAppendSandboxIsEncodingJSONs(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 30, 45, 5, time.UTC)
	for _, info := range []apitypes.SandboxInfo{
		{ID: "sb1", SandboxSpecID: "spec", Status: "MISSING", CreatedAt: at, Backend: "bwrap", Detail: ptr(`gone \ "away"`)},
		{ID: "sb2", CreatedByUserID: ptr("u2"), SandboxSpecID: "spec", Status: "RUNNING", SessionAPIKey: ptr("key"), CreatedAt: at, Backend: "process",
			ExposedURLs: []apitypes.ExposedURL{{Name: "AGENT_SERVER", URL: "http://127.0.0.1:8000/sb2?a=1&b=<2>", Port: 8000}, {Name: "VS", URL: "", Port: 0}}},
		{ID: "sb3", SandboxSpecID: "", Status: "PAUSED", CreatedAt: time.Unix(1, 0).In(time.FixedZone("x", -7200)), ExposedURLs: []apitypes.ExposedURL{}},
	} {
		var got, want bytes.Buffer
		appendSandbox(&got, info)
		if err := appendJSON(&want, info); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("sandbox %s: wrote\n%s\nencoding/json writes\n%s", info.ID, got.Bytes(), want.Bytes())
		}
	}
}

// referenceStartTask is the task through encoding/json, its request hidden and spliced last.
func referenceStartTask(a *API, t conversation.StartTask) []byte {
	task := a.startTask(t)
	req, _ := task.Request.MarshalJSON()
	head := struct {
		*apitypes.AppConversationStartTask
		Request *struct{} `json:"request,omitempty"`
	}{AppConversationStartTask: &task}
	var buf bytes.Buffer
	appendJSON(&buf, head)
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`,"request":`)
	buf.Write(req)
	buf.WriteByte('}')
	return buf.Bytes()
}

// TestAppendAppConversationIsEncodingJSONs: a conversation as the listing writes it is the
// bytes encoding/json writes for its apitypes form, with or without each optional field.
func TestAppendAppConversationIsEncodingJSONs(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 30, 45, 120000000, time.UTC)
	budget := 2.5
	provider, trigger, status := apitypes.ProviderType("github"), apitypes.ConversationTrigger("resolver"), apitypes.ExecutionStatus("running")
	for _, tc := range []struct {
		c       apitypes.AppConversation
		metrics string
	}{
		{c: apitypes.AppConversation{ID: "c1", SandboxStatus: "MISSING", AgentKind: "openhands", ConversationStatus: "STOPPED", ConversationVersion: "V1",
			CreatedAt: at, UpdatedAt: at}},
		{c: apitypes.AppConversation{ID: "c2", CreatedByUserID: ptr("u2"), SandboxID: "sb2", SelectedRepository: ptr("octo/<widgets>"),
			SelectedBranch: ptr("main & \"dev\""), GitProvider: &provider, Title: ptr("fix \u2028 the\tbug"), Trigger: &trigger,
			PRNumber: []int{}, LLMModel: ptr("gpt"), ParentConversationID: ptr("c1"), SubConversationIDs: []string{},
			CreatedAt: at.In(time.FixedZone("x", 3600)), UpdatedAt: time.Unix(0, 0).UTC(), SandboxStatus: "RUNNING", ExecutionStatus: &status,
			ConversationURL: ptr("http://127.0.0.1:1/api?x=1&y=2"), SessionAPIKey: ptr("key"), AgentKind: "openhands", Public: ptr(true),
			Tags: map[string]string{}, ConversationStatus: "RUNNING", ConversationVersion: "V0", WaitingForNode: ptr("node-2 \"b\"")},
			metrics: `{"model_name":"gpt <4>","accumulated_cost":0.25,"max_budget_per_task":null,"accumulated_token_usage":null}`},
		{c: apitypes.AppConversation{ID: "c3", PRNumber: []int{3, -1, 1 << 40}, SubConversationIDs: []string{"a", "b\"c"}, Public: ptr(false),
			Tags: map[string]string{"z": "last", "a": "first", "\x00k": "v\xff", "é": "<>"}, CreatedAt: at, UpdatedAt: at},
			metrics: `{"model_name":"m","accumulated_cost":1e-7,"accumulated_token_usage":{"model":"m","prompt_tokens":12,"response_id":"r&1"}}`},
	} {
		metrics := []byte("null")
		if tc.metrics != "" {
			tc.c.Metrics = &apitypes.MetricsSnapshot{}
			if err := json.Unmarshal([]byte(tc.metrics), tc.c.Metrics); err != nil {
				t.Fatal(err)
			}
			if tc.c.ID == "c3" {
				tc.c.Metrics.MaxBudgetPerTask = &budget
			}
			var buf bytes.Buffer
			if err := appendJSON(&buf, tc.c.Metrics); err != nil {
				t.Fatal(err)
			}
			metrics = buf.Bytes()
		}
		var got, want bytes.Buffer
		appendAppConversation(&got, tc.c, metrics)
		if err := appendJSON(&want, tc.c); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("conversation %s: wrote\n%s\nencoding/json writes\n%s", tc.c.ID, got.Bytes(), want.Bytes())
		}
	}
	// Through the API's conversion, the metrics from its cache, decoded and as stored.
	a := &API{}
	for _, raw := range []string{"", `{"model_name":"m","accumulated_cost":3,"extra":1}`, `not json`} {
		v := conversation.View{Conversation: conversation.Conversation{ID: "c4", OwnerID: "u4", Version: conversation.V1, Metrics: json.RawMessage(raw),
			CreatedAt: at, UpdatedAt: at}, SandboxStatus: "MISSING"}
		for range 2 { // decoded, then from the cache
			var got, want bytes.Buffer
			a.appendAppConversation(&got, v)
			if err := appendJSON(&want, a.appConversation(v)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("metrics %q: wrote\n%s\nencoding/json writes\n%s", raw, got.Bytes(), want.Bytes())
			}
		}
	}
}
