package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
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

// TestListedEncodings: a listing's conversations (V1 and V0) and start tasks are written from
// the encodings kept by their versions exactly as they encode as they are now; a new version is
// encoded anew; a running sandbox's session key that could not be opened is not kept; and
// ReleaseMemory empties the kept encodings, which hold session keys.
func TestListedEncodings(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 30, 45, 0, time.UTC)
	opens := true
	a := &API{d: Deps{PublicURL: "http://127.0.0.1:1", Open: func(sealed []byte) ([]byte, error) {
		if !opens {
			return nil, errors.New("no key opens it")
		}
		return append([]byte("key of "), sealed...), nil
	}}, log: slog.New(slog.DiscardHandler), encoded: listingcache.New(1 << 20)}
	// page writes views as the V1 and V0 listings do (writeListed), each page read from views
	// as the store's ConversationsAt reads it, and checks both against writeJSON's encoding of
	// their page types as they are now. It returns the V1 page and the number of views read.
	page := func(what string, views []conversation.View, next string) ([]byte, int) {
		t.Helper()
		ls := make([]paging.Listed, len(views))
		for i := range views {
			ls[i] = listingcache.ListedRow(listingcache.Conversations, &views[i])
		}
		read := 0
		at := func(ls []paging.Listed) ([]conversation.View, error) {
			var out []conversation.View
			for _, l := range ls {
				for _, v := range views {
					if v.ID == l.ID {
						out = append(out, v)
					}
				}
			}
			read += len(out)
			return out, nil
		}
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		if err := writeListed(a, got, listedAppConversations, "items", ls, next, at); err != nil {
			t.Fatal(err)
		}
		set := apitypes.AppConversationPage{NextPageID: optString(next)}
		for _, v := range views {
			set.Items = append(set.Items, a.appConversation(v))
		}
		writeJSON(want, http.StatusOK, set)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("%s: wrote\n%s\nwriteJSON writes\n%s", what, got.Body.Bytes(), want.Body.Bytes())
		}
		gotInfo, wantInfo := httptest.NewRecorder(), httptest.NewRecorder()
		if err := writeListed(a, gotInfo, listedConversationInfos, "results", ls, next, at); err != nil {
			t.Fatal(err)
		}
		infos := apitypes.ConversationInfoResultSet{NextPageID: optString(next)}
		for _, v := range views {
			infos.Results = append(infos.Results, a.conversationInfo(v))
		}
		writeJSON(wantInfo, http.StatusOK, infos)
		if !bytes.Equal(gotInfo.Body.Bytes(), wantInfo.Body.Bytes()) {
			t.Fatalf("%s, V0: wrote\n%s\nwriteJSON writes\n%s", what, gotInfo.Body.Bytes(), wantInfo.Body.Bytes())
		}
		return got.Body.Bytes(), read
	}
	check := func(what string, v conversation.View) []byte {
		t.Helper()
		b, _ := page(what, []conversation.View{v}, "")
		return b
	}
	v := conversation.View{Conversation: conversation.Conversation{ID: "c1", OwnerID: "u1", SandboxID: "sb1", Version: conversation.V1,
		Title: "first", CreatedAt: at, UpdatedAt: at, ExecutionStatus: "running"}, SandboxStatus: sandbox.StatusRunning,
		SandboxKeySealed: []byte("sb1"), Rev: 3}
	if _, read := page("first listing", []conversation.View{v}, ""); read != 2 {
		t.Fatalf("first listings read %d views, want 1 each", read)
	}
	if a.encoded.Len() != 2 {
		t.Fatalf("%d encodings kept after a V1 and a V0 listing of one conversation, want 2", a.encoded.Len())
	}
	if _, read := page("listed again", []conversation.View{v}, ""); read != 0 {
		t.Fatalf("listed again at the same version, %d views were read", read)
	}

	// A new version of it: renamed, then its sandbox paused.
	v.Title, v.Rev = "renamed", 4
	if b := check("renamed", v); !bytes.Contains(b, []byte(`"renamed"`)) {
		t.Fatalf("renamed conversation written as %s", b)
	}
	v.SandboxStatus, v.Rev = sandbox.StatusPaused, 5
	if b := check("paused", v); bytes.Contains(b, []byte("key of")) {
		t.Fatalf("paused conversation written with its session key: %s", b)
	}

	// A session key that does not open is written as null, and not kept.
	a.ReleaseMemory()
	if a.encoded.Len() != 0 {
		t.Fatalf("%d encodings kept after ReleaseMemory, want none", a.encoded.Len())
	}
	v.SandboxStatus, v.Rev = sandbox.StatusRunning, 6
	opens = false
	check("key not opened", v)
	if a.encoded.Len() != 0 {
		t.Fatalf("the encoding without the session key it could not open was kept")
	}
	opens = true
	if b := check("key opened", v); !bytes.Contains(b, []byte(`"session_api_key":"key of sb1"`)) {
		t.Fatalf("conversation written without its session key once it opens: %s", b)
	}

	// Start tasks likewise, beside the conversation of the same id.
	task := conversation.StartTask{ID: "c1", OwnerID: "u1", Status: conversation.TaskWorking, ConversationID: "c1", SandboxID: "sb1",
		Request: json.RawMessage(`{"title":"t"}`), CreatedAt: at, UpdatedAt: at, Rev: 6}
	tasksRead := 0
	checkTask := func(what string) []byte {
		t.Helper()
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		ls := []paging.Listed{listingcache.ListedRow(listingcache.Tasks, &task)}
		if err := writeListed(a, got, listedStartTasks, "items", ls, "", func(ls []paging.Listed) ([]conversation.StartTask, error) {
			tasksRead += len(ls)
			return []conversation.StartTask{task}, nil
		}); err != nil {
			t.Fatal(err)
		}
		writePage(want, 1, "", func(buf *bytes.Buffer, _ int) { a.appendStartTask(buf, task) })
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("%s: wrote\n%s\nfresh, it writes\n%s", what, got.Body.Bytes(), want.Body.Bytes())
		}
		return got.Body.Bytes()
	}
	checkTask("task listed")
	checkTask("task listed again")
	if tasksRead != 1 {
		t.Fatalf("a start task listed twice at one version was read %d times, want once", tasksRead)
	}
	if b := check("the conversation of the task's id", v); !bytes.Contains(b, []byte(`"conversation_version"`)) {
		t.Fatalf("conversation written as %s", b)
	}

	// Pages whole, one row kept and one not, with and without a next page.
	views := []conversation.View{v, {Conversation: conversation.Conversation{ID: "c2", OwnerID: "u1", Version: conversation.V1,
		Title: "second", CreatedAt: at, UpdatedAt: at}, SandboxStatus: sandbox.StatusMissing, Rev: 1}}
	for _, next := range []string{"", "page-2"} {
		page("two rows, next "+next, views, next)
	}

	// A row deleted between the listing of its version and the read of it is left out; one
	// changed in between is written as read, and kept at the version read.
	third := views[1]
	third.ID, third.Title = "c3", "third"
	changed := third
	changed.Title, changed.Rev = "changed in between", 2
	ls := []paging.Listed{listingcache.ListedRow(listingcache.Conversations, &views[0]), {ID: "gone", Created: third.CreatedAt.UnixNano(), Rev: 1}, listingcache.ListedRow(listingcache.Conversations, &third)}
	got := httptest.NewRecorder()
	if err := writeListed(a, got, listedAppConversations, "items", ls, "", func([]paging.Listed) ([]conversation.View, error) {
		return []conversation.View{changed}, nil
	}); err != nil {
		t.Fatal(err)
	}
	want := httptest.NewRecorder()
	writeJSON(want, http.StatusOK, apitypes.AppConversationPage{Items: []apitypes.AppConversation{a.appConversation(views[0]), a.appConversation(changed)}})
	if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("a page with a row deleted and one changed since listed: wrote\n%s\nwant\n%s", got.Body.Bytes(), want.Body.Bytes())
	}
	if _, read := page("the changed row listed at its new version", []conversation.View{changed}, ""); read != 1 {
		t.Fatalf("the row changed in between was read again %d times at its new version, want once (V0)", read)
	}
	task.Status, task.Rev = conversation.TaskReady, 7
	if b := checkTask("task ready"); !bytes.Contains(b, []byte(`"app_conversation_id":"c1"`)) {
		t.Fatalf("ready task written as %s", b)
	}
	if tasksRead != 2 {
		t.Fatalf("a start task listed at a new version was not read again")
	}

	// Sandboxes likewise: kept at their versions, a new version read again, and a running
	// sandbox's key that does not open written as null and not kept.
	sb := sandbox.Sandbox{ID: "sb1", OwnerID: "u1", SpecID: "default", Backend: "process", Status: sandbox.StatusRunning,
		SessionKeySealed: []byte("sb1"), CreatedAt: at, UpdatedAt: at, Rev: 2}
	sandboxesRead := 0
	checkSandbox := func(what string) []byte {
		t.Helper()
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		ls := []paging.Listed{listingcache.ListedRow(listingcache.Sandboxes, &sb)}
		if err := writeListed(a, got, listedSandboxes, "items", ls, "", func(ls []paging.Listed) ([]sandbox.Sandbox, error) {
			sandboxesRead += len(ls)
			return []sandbox.Sandbox{sb}, nil
		}); err != nil {
			t.Fatal(err)
		}
		writeJSON(want, http.StatusOK, apitypes.SandboxPage{Items: []apitypes.SandboxInfo{a.sandboxInfo(sb)}})
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("%s: wrote\n%s\nwriteJSON writes\n%s", what, got.Body.Bytes(), want.Body.Bytes())
		}
		return got.Body.Bytes()
	}
	checkSandbox("sandbox listed")
	if b := checkSandbox("sandbox listed again"); sandboxesRead != 1 || !bytes.Contains(b, []byte(`"session_api_key":"key of sb1"`)) {
		t.Fatalf("a sandbox listed twice at one version was read %d times (want once), and written as %s", sandboxesRead, b)
	}
	sb.Status, sb.Rev = sandbox.StatusPaused, 3
	if b := checkSandbox("sandbox paused"); sandboxesRead != 2 || bytes.Contains(b, []byte("key of")) {
		t.Fatalf("a paused sandbox listed at its new version was read %d times in all (want 2), and written as %s", sandboxesRead, b)
	}
	sb.Status, sb.Rev = sandbox.StatusRunning, 4
	opens = false
	a.ReleaseMemory()
	checkSandbox("sandbox key not opened")
	opens = true
	if b := checkSandbox("sandbox key opened"); sandboxesRead != 4 || !bytes.Contains(b, []byte(`"session_api_key":"key of sb1"`)) {
		t.Fatalf("a sandbox whose key did not open was kept (read %d times in all, want 4), or written without its key once it opens: %s", sandboxesRead, b)
	}

	// Without kept encodings (the listing cache off), every listing reads and encodes its rows.
	a.encoded = nil
	for range 2 {
		if _, read := page("without kept encodings", views, "page-2"); read != 2*len(views) {
			t.Fatalf("without kept encodings, a V1 and a V0 listing of %d views read %d", len(views), read)
		}
	}
}
