package kubernetes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// TestConversationAcrossResume: a conversation on the kubernetes backend, whose pause removes
// the pod, goes on after a resume in a new pod on the same workspace, and its agent is told,
// in its log and so in what the model reads, that the sandbox's processes were started again.
func TestConversationAcrossResume(t *testing.T) {
	needCluster(t)
	b := newBackend(t, nil)
	spec := testSpec()
	cfg, err := config.Load([]string{"--data-dir", sandboxtest.ShortDir(t), "--admin-key", "k8s-admin-key-0123456789",
		"--sandbox-backend", "process", "--addr", "127.0.0.1:0", "--agent-server-addr", "off", "--conversation-titles", "off",
		"--sandbox-start-timeout", "5m", "--default-spec", spec.ID,
		// No warm pool: its pods would outlive the server (a pool in the cluster is the
		// replicas', kept across their restarts) and be found by the package's other tests.
		"--sandbox-pool", "0"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Specs = []config.SpecConfig{{ID: spec.ID, Command: spec.Command, InitialEnv: spec.InitialEnv, Image: spec.Image, WorkingDir: spec.WorkingDir}}
	model := llmtest.NewOpenAI(t,
		llmtest.Calls(llmtest.Call("terminal", `{"command":"echo kept > kept"}`)),
		llmtest.Text("Wrote it."),
		llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
			if !slices.ContainsFunc(req.Messages, func(m llm.Message) bool {
				return m.Role == llm.RoleUser && strings.Contains(m.Text(), "resumed by starting it again")
			}) {
				t.Errorf("after the resume the model was not told the sandbox started again: %+v", req.Messages)
			}
			return llmtest.Calls(llmtest.Call("terminal", `{"command":"cat kept"}`))
		}},
		llmtest.Text("Still there."),
	)
	cfg.LLMModel, cfg.LLMBaseURL, cfg.LLMAPIKey = "gpt-4o", model.URL(), llmtest.APIKey
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := apptest.Start(ctx, app.Options{Config: cfg, Backend: b, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	users, _, err := s.Store.ListUsers(ctx, paging.Query{Limit: 1})
	if err != nil || len(users) != 1 {
		t.Fatalf("the admin: %v %v", users, err)
	}
	owner := users[0]
	_, task, err := s.Conversations.Create(ctx, owner.ID, conversation.CreateRequest{Version: conversation.V1, InitialText: "Write kept."})
	if err != nil {
		t.Fatal(err)
	}
	settled := func(what string, want string) []event.Event {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			v, err := s.Conversations.Get(ctx, owner.ID, task.ConversationID)
			if err == nil && v.ExecutionStatus == want {
				evs, err := s.Store.ConversationEvents(ctx, task.ConversationID, 0)
				if err != nil {
					t.Fatal(err)
				}
				return evs
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the agent is %q after 5 minutes (%v)", what, v.ExecutionStatus, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settled("the first answer", "finished")
	v, err := s.Conversations.Get(ctx, owner.ID, task.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Destroy(context.Background(), sandbox.Instance{ID: v.SandboxID}) })
	if err := s.Sandboxes.Pause(ctx, owner.ID, v.SandboxID); err != nil {
		t.Fatal(err)
	}
	if err := s.Sandboxes.Resume(ctx, owner.ID, v.SandboxID); err != nil {
		t.Fatal(err)
	}
	if err := s.Conversations.SendMessage(ctx, owner.ID, task.ConversationID, conversation.Message{Text: "Is it there?"}, true); err != nil {
		t.Fatal(err)
	}
	evs := settled("the answer after the resume", "finished")
	notices := 0
	for _, e := range evs {
		if e.Kind == event.KindMessage && e.Source == event.SourceEnvironment && strings.Contains(string(e.Body), "resumed by starting it again") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d notices of the restart in the log, want 1", notices)
	}
	var outputs []string
	for _, e := range evs {
		if e.Kind == event.KindObservation {
			outputs = append(outputs, e.LLMText)
		}
	}
	if len(outputs) != 2 || !strings.Contains(outputs[1], "kept") {
		t.Errorf("the workspace after the resume: observations %q", outputs)
	}
	if n := len(model.Requests()); n != 4 {
		t.Errorf("%d model calls, want 4", n)
	}
}
