package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// v1Task is a start task as the API answers it, decoded with the wire names.
type v1Task struct {
	ID                string         `json:"id"`
	CreatedByUserID   *string        `json:"created_by_user_id"`
	Status            string         `json:"status"`
	Detail            *string        `json:"detail"`
	AppConversationID *string        `json:"app_conversation_id"`
	SandboxID         *string        `json:"sandbox_id"`
	Request           map[string]any `json:"request"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
}

// v1Conv is a V1 conversation as the API answers it.
type v1Conv struct {
	ID                   string    `json:"id"`
	CreatedByUserID      *string   `json:"created_by_user_id"`
	SandboxID            string    `json:"sandbox_id"`
	SelectedRepository   *string   `json:"selected_repository"`
	SelectedBranch       *string   `json:"selected_branch"`
	GitProvider          *string   `json:"git_provider"`
	Title                *string   `json:"title"`
	Trigger              *string   `json:"trigger"`
	PRNumber             []int     `json:"pr_number"`
	LLMModel             *string   `json:"llm_model"`
	ParentConversationID *string   `json:"parent_conversation_id"`
	CreatedAt            time.Time `json:"created_at"`
	UpdatedAt            time.Time `json:"updated_at"`
	SandboxStatus        string    `json:"sandbox_status"`
	ExecutionStatus      *string   `json:"execution_status"`
	ConversationURL      *string   `json:"conversation_url"`
	SessionAPIKey        *string   `json:"session_api_key"`
	ConversationStatus   string    `json:"conversation_status"`
	ConversationVersion  string    `json:"conversation_version"`
}

type v1ConvPage struct {
	Items      []v1Conv `json:"items"`
	NextPageID *string  `json:"next_page_id"`
}

type v1TaskPage struct {
	Items      []v1Task `json:"items"`
	NextPageID *string  `json:"next_page_id"`
}

// startConversation posts a V1 start request and returns the start task it answers.
func (e *env) startConversation(key string, body map[string]any) v1Task {
	e.t.Helper()
	var task v1Task
	e.must("POST", "/api/v1/app-conversations", key, body, http.StatusOK, &task)
	if task.ID == "" || task.Status != "WORKING" || task.AppConversationID != nil {
		e.t.Fatalf("start answered %+v; want a WORKING task without app_conversation_id", task)
	}
	return task
}

// getTask reads one start task through the batch get; nil when the caller has none.
func (e *env) getTask(key, id string) *v1Task {
	e.t.Helper()
	var list []*v1Task
	e.must("GET", "/api/v1/app-conversations/start-tasks?ids="+id, key, nil, http.StatusOK, &list)
	if len(list) != 1 {
		e.t.Fatalf("batch get of one start task answered %d items", len(list))
	}
	return list[0]
}

// waitTask polls a start task until it has status want. On the way it checks that
// app_conversation_id is set exactly when the task is READY, and that a task that ends in the
// other terminal status fails the test at once.
func (e *env) waitTask(key, id, want string) v1Task {
	e.t.Helper()
	var got v1Task
	e.eventually("start task "+id+" "+want, func() bool {
		t := e.getTask(key, id)
		if t == nil {
			e.t.Fatalf("start task %s vanished", id)
		}
		got = *t
		if (got.Status == "READY") != (got.AppConversationID != nil) {
			e.t.Fatalf("start task %+v: app_conversation_id must be set exactly when READY", got)
		}
		if got.Status != want && (got.Status == "READY" || got.Status == "ERROR") {
			e.t.Fatalf("start task ended %s (detail %v), want %s", got.Status, strOrNil(got.Detail), want)
		}
		return got.Status == want
	})
	return got
}

// waitTaskReady waits for a start task to be READY and returns its conversation id.
func (e *env) waitTaskReady(key, id string) string {
	e.t.Helper()
	return *e.waitTask(key, id, "READY").AppConversationID
}

// getConversation reads one V1 conversation through the batch get; nil when the caller has none.
func (e *env) getConversation(key, id string) *v1Conv {
	e.t.Helper()
	var list []*v1Conv
	e.must("GET", "/api/v1/app-conversations?ids="+id, key, nil, http.StatusOK, &list)
	if len(list) != 1 {
		e.t.Fatalf("batch get of one conversation answered %d items", len(list))
	}
	return list[0]
}

// newConversation starts a conversation and waits until it is READY.
func (e *env) newConversation(key string, body map[string]any) (v1Task, v1Conv) {
	e.t.Helper()
	task := e.startConversation(key, body)
	cid := e.waitTaskReady(key, task.ID)
	e.settleAgent(key, cid)
	c := e.getConversation(key, cid)
	if c == nil {
		e.t.Fatalf("READY conversation %s is not there", cid)
	}
	return *e.getTask(key, task.ID), *c
}

// settleAgent waits until the conversation's agent has stopped: the agent that starts when a
// conversation is READY changes its record (execution status, metrics, updated_at). A READY
// conversation is idle before its agent first runs (the task is READY a moment before its
// agent starts), so it counts as settled only once the agent has run (its first step records
// the system prompt; a paused conversation's agent does not start) and has answered the
// newest user message, if there is one.
func (e *env) settleAgent(key, convID string) {
	e.t.Helper()
	e.eventually("the agent of "+convID+" to stop", func() bool {
		c := e.getConversation(key, convID)
		if c == nil || c.ExecutionStatus == nil || *c.ExecutionStatus == "running" || e.app.Conversations.AgentRunning(convID) {
			return false
		}
		if *c.ExecutionStatus != "paused" && !e.hasEvent(*c.CreatedByUserID, convID, event.KindSystemPrompt) {
			return false
		}
		return *c.ExecutionStatus != "idle" || e.answered(*c.CreatedByUserID, convID)
	})
}

// hasEvent reports whether the conversation's log holds an event of the kind.
func (e *env) hasEvent(ownerID, convID, kind string) bool {
	e.t.Helper()
	n, err := e.app.Conversations.CountEvents(e.t.Context(), ownerID, event.Filter{ConversationID: convID, Kind: kind})
	if err != nil {
		e.t.Fatal(err)
	}
	return n > 0
}

// answered reports whether the agent recorded an event after the newest user message of the
// conversation, or there is none.
func (e *env) answered(ownerID, convID string) bool {
	e.t.Helper()
	ctx := e.t.Context()
	msgs, _, err := e.app.Conversations.SearchEvents(ctx, ownerID,
		event.Filter{ConversationID: convID, Kind: "MessageEvent", Source: event.SourceUser}, true, paging.Query{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(msgs) == 0 {
		return true
	}
	n, err := e.app.Conversations.CountEvents(ctx, ownerID,
		event.Filter{ConversationID: convID, Source: event.SourceAgent, AfterSeq: msgs[0].Seq})
	if err != nil {
		e.t.Fatal(err)
	}
	return n > 0
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// wantProblem fails unless the answer is a 422 with exactly one problem, at loc, of type typ
// (any type when typ is empty).
func wantProblem(t *testing.T, status int, body []byte, typ string, loc ...any) {
	t.Helper()
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d %s, want 422 at %v", status, body, loc)
	}
	var v struct {
		Detail []struct {
			Type string `json:"type"`
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("422 body %s: %v", body, err)
	}
	wantLoc, _ := json.Marshal(loc)
	if len(v.Detail) != 1 {
		t.Fatalf("422 body %s: want exactly one problem at %s", body, wantLoc)
	}
	p := v.Detail[0]
	gotLoc, _ := json.Marshal(p.Loc)
	if !bytes.Equal(gotLoc, wantLoc) || (typ != "" && p.Type != typ) || p.Msg == "" {
		t.Fatalf("problem %s: want type %q at %s with a message", body, typ, wantLoc)
	}
}

func TestV1Start(t *testing.T) {
	e := newEnv(t)
	userID, key := e.newUser("alice")
	e.repo(key, "github", "octo/widgets")

	req := map[string]any{
		"title": "  Fix the build  ",
		"initial_message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "make it green"},
			map[string]any{"type": "image", "image_urls": []any{"https://img.example/a.png"}},
		}},
		"selected_repository": "octo/widgets",
		"selected_branch":     "main",
		"git_provider":        "github",
		"trigger":             "gui",
		"pr_number":           []any{7, 9},
		"llm_model":           "test-model",
		"agent_type":          "plan",
	}
	task := e.startConversation(key, req)
	if task.CreatedByUserID == nil || *task.CreatedByUserID != userID {
		t.Fatalf("start task owner %v, want %s", strOrNil(task.CreatedByUserID), userID)
	}
	t.Run("request echoed", func(t *testing.T) {
		for _, k := range []string{"title", "selected_repository", "selected_branch", "git_provider", "trigger", "pr_number", "llm_model", "agent_type"} {
			want, _ := json.Marshal(req[k])
			got, _ := json.Marshal(task.Request[k])
			if !bytes.Equal(got, want) {
				t.Errorf("request.%s echoed as %s, want %s", k, got, want)
			}
		}
		msg, _ := json.Marshal(task.Request["initial_message"])
		for _, part := range []string{`"role":"user"`, `"text":"make it green"`, `"image_urls":["https://img.example/a.png"]`, `"type":"image"`} {
			if !strings.Contains(string(msg), part) {
				t.Errorf("request.initial_message echoed as %s, want it to contain %s", msg, part)
			}
		}
	})

	ready := e.waitTask(key, task.ID, "READY")
	convID := *ready.AppConversationID
	e.settleAgent(key, convID)
	if ready.SandboxID == nil || *ready.SandboxID == "" || ready.Detail != nil || ready.ID != task.ID {
		t.Fatalf("READY task %+v: want its sandbox and no detail", ready)
	}

	c := e.getConversation(key, convID)
	t.Run("conversation", func(t *testing.T) {
		e := e.in(t)
		if c == nil {
			t.Fatal("the READY conversation is not in the batch get")
		}
		want := v1Conv{
			ID: convID, CreatedByUserID: &userID, SandboxID: *ready.SandboxID,
			SelectedRepository: ptrTo("octo/widgets"), SelectedBranch: ptrTo("main"), GitProvider: ptrTo("github"),
			Title: ptrTo("Fix the build"), Trigger: ptrTo("gui"), PRNumber: []int{7, 9}, LLMModel: ptrTo("test-model"),
			CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, SandboxStatus: "RUNNING", SessionAPIKey: c.SessionAPIKey,
			ConversationStatus: "RUNNING", ConversationVersion: "V1",
			// The agent answered the initial message (the test server's model says "OK.").
			ExecutionStatus: ptrTo("finished"),
			ConversationURL: ptrTo(e.cfg.PublicURL + "/agent-server/" + *ready.SandboxID + "/api/conversations/" + convID),
		}
		if !reflect.DeepEqual(*c, want) {
			got, _ := json.Marshal(*c)
			exp, _ := json.Marshal(want)
			t.Fatalf("conversation\n got %s\nwant %s", got, exp)
		}
		sb := e.getSandbox(key, c.SandboxID)
		if c.SessionAPIKey == nil || sb == nil || sb.SessionAPIKey == nil || *c.SessionAPIKey != *sb.SessionAPIKey {
			t.Fatalf("conversation session key %v, sandbox %+v: want the sandbox's key", strOrNil(c.SessionAPIKey), sb)
		}
		if out := e.run(key, c.SandboxID, "echo ok"); out != "ok\n" {
			t.Fatalf("the conversation's sandbox answered %q", out)
		}
	})

	t.Run("search and count", func(t *testing.T) {
		e := e.in(t)
		var page v1ConvPage
		e.must("GET", "/api/v1/app-conversations/search", key, nil, http.StatusOK, &page)
		if len(page.Items) != 1 || page.Items[0].ID != convID || page.NextPageID != nil || !reflect.DeepEqual(page.Items[0], *c) {
			t.Fatalf("search answered %+v, want the conversation alone", page)
		}
		var n int
		e.must("GET", "/api/v1/app-conversations/count", key, nil, http.StatusOK, &n)
		if n != 1 {
			t.Fatalf("count %d, want 1", n)
		}
		var tasks v1TaskPage
		e.must("GET", "/api/v1/app-conversations/start-tasks/search", key, nil, http.StatusOK, &tasks)
		if len(tasks.Items) != 1 || tasks.Items[0].ID != task.ID || *tasks.Items[0].AppConversationID != convID {
			t.Fatalf("start task search answered %+v", tasks)
		}
	})

	t.Run("the conversation is listed by V0 too", func(t *testing.T) {
		e := e.in(t)
		var v0 struct {
			Results []struct {
				ConversationID      string `json:"conversation_id"`
				ConversationVersion string `json:"conversation_version"`
			} `json:"results"`
		}
		e.must("GET", "/api/conversations", key, nil, http.StatusOK, &v0)
		if len(v0.Results) != 1 || v0.Results[0].ConversationID != convID || v0.Results[0].ConversationVersion != "V1" {
			t.Fatalf("V0 listing %+v, want the V1 conversation", v0.Results)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

func TestV1BatchGet(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(alice)
	a1Task, a1 := e.newConversation(alice, map[string]any{"sandbox_id": sb, "title": "one"})
	_, a2 := e.newConversation(alice, map[string]any{"sandbox_id": sb, "title": "two"})
	bTask, b1 := e.newConversation(bob, map[string]any{"title": "bob's"})
	unknown := "0123456789abcdef0123456789abcdef"
	dashed := a1.ID[:8] + "-" + a1.ID[8:12] + "-" + a1.ID[12:16] + "-" + a1.ID[16:20] + "-" + a1.ID[20:]

	for _, tc := range []struct {
		name string
		ids  []string
		want []string // "" for null
	}{
		{"request order with nulls", []string{a2.ID, unknown, a1.ID, b1.ID}, []string{a2.ID, "", a1.ID, ""}},
		{"any UUID spelling", []string{strings.ToUpper(dashed), "{" + dashed + "}"}, []string{a1.ID, a1.ID}},
		{"not a UUID", []string{"nope", a2.ID}, []string{"", a2.ID}},
		{"repeated id", []string{a1.ID, a1.ID}, []string{a1.ID, a1.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			var list []*v1Conv
			e.must("GET", "/api/v1/app-conversations?"+idsQuery("ids", tc.ids), alice, nil, http.StatusOK, &list)
			var got []string
			for _, c := range list {
				if c == nil {
					got = append(got, "")
				} else {
					got = append(got, c.ID)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("batch get answered %q, want %q", got, tc.want)
			}
		})
	}

	t.Run("start tasks", func(t *testing.T) {
		e := e.in(t)
		var list []*v1Task
		e.must("GET", "/api/v1/app-conversations/start-tasks?"+idsQuery("ids", []string{bTask.ID, a1Task.ID, unknown}), alice, nil, http.StatusOK, &list)
		if len(list) != 3 || list[0] != nil || list[1] == nil || list[1].ID != a1Task.ID || list[2] != nil {
			t.Fatalf("start task batch get answered %+v, want [null, alice's task, null]", list)
		}
	})

	t.Run("empty", func(t *testing.T) {
		e := e.in(t)
		for _, path := range []string{"/api/v1/app-conversations", "/api/v1/app-conversations/start-tasks"} {
			body := e.must("GET", path, alice, nil, http.StatusOK, nil)
			if strings.TrimSpace(string(body)) != "[]" {
				t.Fatalf("%s without ids answered %s, want []", path, body)
			}
		}
	})
}

// idsQuery repeats name=id for every id.
func idsQuery(name string, ids []string) string {
	q := url.Values{}
	for _, id := range ids {
		q.Add(name, id)
	}
	return q.Encode()
}

func TestV1SearchFilters(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(alice)
	var convs []v1Conv // oldest first
	for _, title := range []string{"Alpha report", "beta REPORT", "Gamma 100%"} {
		_, c := e.newConversation(alice, map[string]any{"sandbox_id": sb, "title": title})
		convs = append(convs, c)
		time.Sleep(2 * time.Millisecond) // distinct timestamps whatever the clock's resolution
	}
	e.newConversation(bob, map[string]any{"title": "Alpha bob"})
	a, b, g := convs[0], convs[1], convs[2]
	ts := func(t time.Time) string { return t.Format(time.RFC3339Nano) }

	for _, tc := range []struct {
		name   string
		filter url.Values
		want   []v1Conv
	}{
		{"no filter, newest first", url.Values{}, []v1Conv{g, b, a}},
		{"title contains, any case", url.Values{"title__contains": {"report"}}, []v1Conv{b, a}},
		{"title contains upper case", url.Values{"title__contains": {"ALPHA"}}, []v1Conv{a}},
		{"title contains is literal", url.Values{"title__contains": {"0%"}}, []v1Conv{g}},
		{"title contains a percent sign", url.Values{"title__contains": {"%"}}, []v1Conv{g}},
		{"title contains underscore", url.Values{"title__contains": {"_"}}, nil},
		{"created_at gte", url.Values{"created_at__gte": {ts(b.CreatedAt)}}, []v1Conv{g, b}},
		{"created_at lt", url.Values{"created_at__lt": {ts(b.CreatedAt)}}, []v1Conv{a}},
		{"created_at range", url.Values{"created_at__gte": {ts(a.CreatedAt)}, "created_at__lt": {ts(g.CreatedAt)}}, []v1Conv{b, a}},
		{"created_at in another zone", url.Values{"created_at__gte": {b.CreatedAt.In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano)}}, []v1Conv{g, b}},
		{"updated_at gte", url.Values{"updated_at__gte": {ts(b.UpdatedAt)}}, []v1Conv{g, b}},
		{"updated_at lt", url.Values{"updated_at__lt": {ts(b.UpdatedAt)}}, []v1Conv{a}},
		{"updated_at range", url.Values{"updated_at__gte": {ts(a.UpdatedAt)}, "updated_at__lt": {ts(g.UpdatedAt)}}, []v1Conv{b, a}},
		{"filters combine", url.Values{"title__contains": {"a"}, "created_at__lt": {ts(g.CreatedAt)}, "updated_at__gte": {ts(b.UpdatedAt)}}, []v1Conv{b}},
		{"empty range", url.Values{"created_at__gte": {ts(g.CreatedAt.Add(time.Second))}}, nil},
		{"sandbox_id eq", url.Values{"sandbox_id__eq": {sb}}, []v1Conv{g, b, a}},
		{"sandbox_id eq another sandbox", url.Values{"sandbox_id__eq": {e.runningSandbox(alice)}}, nil},
		{"sandbox_id eq combines", url.Values{"sandbox_id__eq": {sb}, "title__contains": {"gamma"}}, []v1Conv{g}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			var page v1ConvPage
			e.must("GET", "/api/v1/app-conversations/search?"+tc.filter.Encode(), alice, nil, http.StatusOK, &page)
			var got, want []string
			for _, c := range page.Items {
				got = append(got, c.ID)
			}
			for _, c := range tc.want {
				want = append(want, c.ID)
			}
			if !slices.Equal(got, want) || page.NextPageID != nil {
				t.Fatalf("search answered %q (next %v), want %q", got, strOrNil(page.NextPageID), want)
			}
			var n int
			e.must("GET", "/api/v1/app-conversations/count?"+tc.filter.Encode(), alice, nil, http.StatusOK, &n)
			if n != len(tc.want) {
				t.Fatalf("count %d, want %d", n, len(tc.want))
			}
		})
	}
}

func TestV1TaskSearch(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(alice)
	var tasks []v1Task // oldest first
	for i := range 3 {
		task, _ := e.newConversation(alice, map[string]any{"sandbox_id": sb, "title": fmt.Sprint("t", i)})
		tasks = append(tasks, task)
		time.Sleep(2 * time.Millisecond)
	}
	bobTask, _ := e.newConversation(bob, map[string]any{})
	cid := *tasks[1].AppConversationID
	dashedCID := cid[:8] + "-" + cid[8:12] + "-" + cid[12:16] + "-" + cid[16:20] + "-" + cid[20:]

	byCreated := slices.Clone(tasks)
	byUpdated := slices.Clone(tasks)
	slices.SortFunc(byUpdated, func(x, y v1Task) int {
		if c := x.UpdatedAt.Compare(y.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	ids := func(ts []v1Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	reversed := func(ts []v1Task) []v1Task {
		out := slices.Clone(ts)
		slices.Reverse(out)
		return out
	}

	for _, tc := range []struct {
		name   string
		filter url.Values
		want   []v1Task
	}{
		{"default is newest first", url.Values{}, reversed(byCreated)},
		{"CREATED_AT", url.Values{"sort_order": {"CREATED_AT"}}, byCreated},
		{"CREATED_AT_DESC", url.Values{"sort_order": {"CREATED_AT_DESC"}}, reversed(byCreated)},
		{"UPDATED_AT", url.Values{"sort_order": {"UPDATED_AT"}}, byUpdated},
		{"UPDATED_AT_DESC", url.Values{"sort_order": {"UPDATED_AT_DESC"}}, reversed(byUpdated)},
		{"conversation_id eq", url.Values{"conversation_id__eq": {cid}}, tasks[1:2]},
		{"conversation_id eq, dashed", url.Values{"conversation_id__eq": {strings.ToUpper(dashedCID)}}, tasks[1:2]},
		{"another user's conversation id", url.Values{"conversation_id__eq": {*bobTask.AppConversationID}}, nil},
		{"created_at gte", url.Values{"created_at__gte": {tasks[1].CreatedAt.Format(time.RFC3339Nano)}, "sort_order": {"CREATED_AT"}}, tasks[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			var page v1TaskPage
			e.must("GET", "/api/v1/app-conversations/start-tasks/search?"+tc.filter.Encode(), alice, nil, http.StatusOK, &page)
			if got, want := ids(page.Items), ids(tc.want); !slices.Equal(got, want) || page.NextPageID != nil {
				t.Fatalf("search answered %q (next %v), want %q", got, strOrNil(page.NextPageID), want)
			}
			count := url.Values{}
			for _, k := range []string{"conversation_id__eq", "created_at__gte"} {
				if v, ok := tc.filter[k]; ok {
					count[k] = v
				}
			}
			var n int
			e.must("GET", "/api/v1/app-conversations/start-tasks/count?"+count.Encode(), alice, nil, http.StatusOK, &n)
			if n != len(tc.want) {
				t.Fatalf("count %d, want %d", n, len(tc.want))
			}
		})
	}

	t.Run("paging in every order", func(t *testing.T) {
		e := e.in(t)
		for _, order := range []string{"CREATED_AT", "CREATED_AT_DESC", "UPDATED_AT", "UPDATED_AT_DESC"} {
			var got []string
			pageID := ""
			for range 10 {
				q := url.Values{"sort_order": {order}, "limit": {"1"}}
				if pageID != "" {
					q.Set("page_id", pageID)
				}
				var page v1TaskPage
				e.must("GET", "/api/v1/app-conversations/start-tasks/search?"+q.Encode(), alice, nil, http.StatusOK, &page)
				got = append(got, ids(page.Items)...)
				if page.NextPageID == nil {
					break
				}
				pageID = *page.NextPageID
			}
			want := ids(byCreated)
			switch order {
			case "CREATED_AT_DESC":
				want = ids(reversed(byCreated))
			case "UPDATED_AT":
				want = ids(byUpdated)
			case "UPDATED_AT_DESC":
				want = ids(reversed(byUpdated))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s one by one: %q, want %q", order, got, want)
			}
		}
	})
}

func TestV1StartOnSandbox(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	sb := e.runningSandbox(alice)
	bobSB := e.runningSandbox(bob)

	t.Run("a paused sandbox is resumed and used", func(t *testing.T) {
		e := e.in(t)
		e.must("POST", "/api/v1/sandboxes/"+sb+"/pause", alice, nil, http.StatusOK, nil)
		task, c := e.newConversation(alice, map[string]any{"sandbox_id": sb})
		if *task.SandboxID != sb || c.SandboxID != sb || c.SandboxStatus != "RUNNING" || c.ConversationStatus != "RUNNING" {
			t.Fatalf("task %+v conversation %+v: want both on sandbox %s, RUNNING", task, c, sb)
		}
		if s := e.sandboxStatus(alice, sb); s != "RUNNING" {
			t.Fatalf("sandbox %q after the start, want RUNNING", s)
		}
		if out := e.run(alice, sb, "echo resumed"); out != "resumed\n" {
			t.Fatalf("resumed sandbox answered %q", out)
		}
		var page sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 1 {
			t.Fatalf("sandboxes %+v: the start must not make a new one", page.Items)
		}
	})

	var unknownBody []byte
	t.Run("unknown sandbox", func(t *testing.T) {
		e := e.in(t)
		var status int
		status, unknownBody = e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": "0123456789abcdef0123456789abcdef"})
		wantProblem(t, status, unknownBody, "value_error", "body", "sandbox_id")
	})

	t.Run("another user's sandbox is unknown", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"sandbox_id": bobSB})
		wantProblem(t, status, body, "value_error", "body", "sandbox_id")
		if !bytes.Equal(body, unknownBody) {
			t.Fatalf("answer for another user's sandbox %s differs from an unknown one's %s", body, unknownBody)
		}
		if s := e.sandboxStatus(bob, bobSB); s != "RUNNING" {
			t.Fatalf("bob's sandbox is %q, want RUNNING", s)
		}
	})

	t.Run("rejected starts stored nothing", func(t *testing.T) {
		e := e.in(t)
		var n int
		e.must("GET", "/api/v1/app-conversations/start-tasks/count", alice, nil, http.StatusOK, &n)
		if n != 1 {
			t.Fatalf("alice has %d start tasks, want 1", n)
		}
		e.must("GET", "/api/v1/app-conversations/count", alice, nil, http.StatusOK, &n)
		if n != 1 {
			t.Fatalf("alice has %d conversations, want 1", n)
		}
	})
}

func TestV1SubConversation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	_, bob := e.newUser("bob")
	e.repo(alice, "github", "octo/widgets")
	_, parent := e.newConversation(alice, map[string]any{"title": "parent", "selected_repository": "octo/widgets"})
	_, bobConv := e.newConversation(bob, map[string]any{})

	t.Run("child inherits the parent's sandbox", func(t *testing.T) {
		e := e.in(t)
		dashed := parent.ID[:8] + "-" + parent.ID[8:12] + "-" + parent.ID[12:16] + "-" + parent.ID[16:20] + "-" + parent.ID[20:]
		task, child := e.newConversation(alice, map[string]any{"title": "child", "parent_conversation_id": dashed})
		if child.SandboxID != parent.SandboxID || *task.SandboxID != parent.SandboxID {
			t.Fatalf("child on sandbox %s (task %v), want the parent's %s", child.SandboxID, strOrNil(task.SandboxID), parent.SandboxID)
		}
		if child.ParentConversationID == nil || *child.ParentConversationID != parent.ID || child.SelectedRepository == nil || *child.SelectedRepository != "octo/widgets" {
			t.Fatalf("child %+v: want parent %s and its repository", child, parent.ID)
		}
		var sbs sandboxPageJSON
		e.must("GET", "/api/v1/sandboxes/search", alice, nil, http.StatusOK, &sbs)
		if len(sbs.Items) != 1 {
			t.Fatalf("alice has %d sandboxes, want the one they share", len(sbs.Items))
		}

		var page v1ConvPage
		e.must("GET", "/api/v1/app-conversations/search", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 1 || page.Items[0].ID != parent.ID {
			t.Fatalf("default search answered %d items, want the parent only", len(page.Items))
		}
		e.must("GET", "/api/v1/app-conversations/search?include_sub_conversations=true", alice, nil, http.StatusOK, &page)
		if len(page.Items) != 2 || page.Items[0].ID != child.ID || page.Items[1].ID != parent.ID {
			t.Fatalf("search with subs answered %d items, want child and parent", len(page.Items))
		}
	})

	for _, tc := range []struct {
		name, parent, typ string
	}{
		{"unknown parent", "0123456789abcdef0123456789abcdef", "value_error"},
		{"another user's conversation", bobConv.ID, "value_error"},
		{"not a UUID", "nope", "uuid_parsing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/app-conversations", alice, map[string]any{"parent_conversation_id": tc.parent})
			wantProblem(t, status, body, tc.typ, "body", "parent_conversation_id")
		})
	}
}

func TestV1StartValidation(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("alice")
	text := func(role string) map[string]any {
		return map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": "hi"}}}
	}
	for _, tc := range []struct {
		name string
		body any
		typ  string
		loc  []any
	}{
		{"assistant message", map[string]any{"initial_message": text("assistant")}, "value_error", []any{"body", "initial_message", "role"}},
		{"unknown role", map[string]any{"initial_message": text("robot")}, "enum", []any{"body", "initial_message", "role"}},
		{"bad git provider", map[string]any{"git_provider": "svn"}, "enum", []any{"body", "git_provider"}},
		{"bad trigger", map[string]any{"trigger": "cron"}, "enum", []any{"body", "trigger"}},
		{"bad agent type", map[string]any{"agent_type": "chaos"}, "enum", []any{"body", "agent_type"}},
		{"unknown content type", map[string]any{"initial_message": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "ok"}, map[string]any{"type": "video", "url": "x"}}}},
			"union_tag_invalid", []any{"body", "initial_message", "content", 1, "type"}},
		{"text part without text", map[string]any{"initial_message": map[string]any{"content": []any{map[string]any{"type": "text"}}}},
			"missing", []any{"body", "initial_message", "content", 0, "text"}},
		{"image part without urls", map[string]any{"initial_message": map[string]any{"content": []any{map[string]any{"type": "image"}}}},
			"missing", []any{"body", "initial_message", "content", 0, "image_urls"}},
		{"content part not an object", map[string]any{"initial_message": map[string]any{"content": []any{"hi"}}},
			"model_attributes_type", []any{"body", "initial_message", "content", 0}},
		{"pr_number not a list", map[string]any{"pr_number": 7}, "list_type", []any{"body", "pr_number"}},
		{"title not a string", map[string]any{"title": 5}, "string_type", []any{"body", "title"}},
		{"processor without kind", map[string]any{"processors": []any{map[string]any{}}}, "missing", []any{"body", "processors", 0, "kind"}},
		{"sandbox id not a string", map[string]any{"sandbox_id": 1}, "string_type", []any{"body", "sandbox_id"}},
		{"body not an object", "[1]", "model_attributes_type", []any{"body"}},
		{"body not JSON", "{", "json_invalid", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/app-conversations", key, tc.body)
			if tc.loc == nil {
				if status != http.StatusUnprocessableEntity {
					t.Fatalf("%d %s, want 422", status, body)
				}
				return
			}
			wantProblem(t, status, body, tc.typ, tc.loc...)
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/app-conversations", key, map[string]any{"git_provider": "svn", "trigger": "cron"})
		var v struct {
			Detail []struct {
				Loc []any `json:"loc"`
			} `json:"detail"`
		}
		if status != http.StatusUnprocessableEntity || json.Unmarshal(body, &v) != nil || len(v.Detail) != 2 {
			t.Fatalf("%d %s, want 422 with two problems", status, body)
		}
	})

	t.Run("the input is never echoed", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("POST", "/api/v1/app-conversations", key, map[string]any{"git_provider": "secret-value-xyz"})
		if status != http.StatusUnprocessableEntity || strings.Contains(string(body), "secret-value-xyz") {
			t.Fatalf("%d %s: want a 422 that does not repeat the input", status, body)
		}
	})

	t.Run("rejected requests stored nothing", func(t *testing.T) {
		e := e.in(t)
		var n int
		e.must("GET", "/api/v1/app-conversations/start-tasks/count", key, nil, http.StatusOK, &n)
		if n != 0 {
			t.Fatalf("%d start tasks after rejected requests, want 0", n)
		}
	})
}

func TestV1QueryValidation(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("alice")
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("%032x", i)
	}
	searches := []string{
		"/api/v1/app-conversations/search",
		"/api/v1/app-conversations/start-tasks/search",
		"/api/v1/sandboxes/search",
		"/api/v1/sandbox-specs/search",
	}
	type tc struct {
		name, path, typ string
		loc             []any
	}
	var cases []tc
	for _, p := range searches {
		cases = append(cases,
			tc{"limit 0 " + p, p + "?limit=0", "greater_than_equal", []any{"query", "limit"}},
			tc{"limit 101 " + p, p + "?limit=101", "less_than_equal", []any{"query", "limit"}},
			tc{"limit not a number " + p, p + "?limit=ten", "int_parsing", []any{"query", "limit"}},
			tc{"bad page_id " + p, p + "?page_id=bm9wZQ", "value_error", []any{"query", "page_id"}},
			tc{"page_id not base64 " + p, p + "?page_id=%25%25", "value_error", []any{"query", "page_id"}},
		)
	}
	for _, p := range []string{"/api/v1/app-conversations/search", "/api/v1/app-conversations/count"} {
		for _, f := range []string{"created_at__gte", "created_at__lt", "updated_at__gte", "updated_at__lt"} {
			cases = append(cases, tc{"bad date " + f + " " + p, p + "?" + f + "=yesterday", "", []any{"query", f}})
		}
	}
	for _, p := range []string{"/api/v1/app-conversations/start-tasks/search", "/api/v1/app-conversations/start-tasks/count"} {
		cases = append(cases,
			tc{"bad date " + p, p + "?created_at__gte=2024-13-01T00:00:00Z", "", []any{"query", "created_at__gte"}},
			tc{"bad conversation id " + p, p + "?conversation_id__eq=nope", "uuid_parsing", []any{"query", "conversation_id__eq"}},
		)
	}
	cases = append(cases,
		tc{"bad sort order", "/api/v1/app-conversations/start-tasks/search?sort_order=NEWEST", "enum", []any{"query", "sort_order"}},
		tc{"too many conversation ids", "/api/v1/app-conversations?" + idsQuery("ids", many), "too_long", []any{"query", "ids"}},
		tc{"too many start task ids", "/api/v1/app-conversations/start-tasks?" + idsQuery("ids", many), "too_long", []any{"query", "ids"}},
		tc{"too many sandbox ids", "/api/v1/sandboxes?" + idsQuery("id", many), "too_long", []any{"query", "id"}},
		tc{"too many spec ids", "/api/v1/sandbox-specs?" + idsQuery("id", many), "too_long", []any{"query", "id"}},
		tc{"bad include_sub_conversations", "/api/v1/app-conversations/search?include_sub_conversations=maybe", "bool_parsing", []any{"query", "include_sub_conversations"}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("GET", c.path, key, nil)
			wantProblem(t, status, body, c.typ, c.loc...)
		})
	}

	t.Run("100 ids are fine", func(t *testing.T) {
		e := e.in(t)
		var list []*v1Conv
		e.must("GET", "/api/v1/app-conversations?"+idsQuery("ids", many[:100]), key, nil, http.StatusOK, &list)
		if len(list) != 100 || slices.ContainsFunc(list, func(c *v1Conv) bool { return c != nil }) {
			t.Fatalf("batch get of 100 unknown ids answered %d items", len(list))
		}
	})

	t.Run("limits 1 and 100 are fine", func(t *testing.T) {
		e := e.in(t)
		for _, p := range searches {
			e.must("GET", p+"?limit=1", key, nil, http.StatusOK, nil)
			e.must("GET", p+"?limit=100", key, nil, http.StatusOK, nil)
		}
	})
}
