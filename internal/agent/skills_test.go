package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/skill"
)

var testSkills = []skill.Skill{
	{Name: "agents", Type: skill.TypeRepo, Content: "REPO-NOTES: run make check.", Source: "AGENTS.md"},
	{Name: "deploy", Type: skill.TypeKnowledge, Triggers: []string{"deploy", "ship it"},
		Content: "KNOWLEDGE-DEPLOY: use make deploy.", Source: ".openhands/microagents/deploy.md"},
	{Name: "docker", Type: skill.TypeKnowledge, Triggers: []string{"docker"},
		Content: "KNOWLEDGE-DOCKER: use podman.", Source: skill.SourceUser},
}

// TestSkillsInTheSystemMessage: the repo skill is there from the first call; a knowledge skill
// from the call after the user's message that triggers it, once, and still after a restart
// (each run is a new Agent over the same log); it is recorded once in the log.
func TestSkillsInTheSystemMessage(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p int) {
		r := newRig(t, p, llmtest.Text("hello"), llmtest.Text("deploying"), llmtest.Text("again"), llmtest.Text("both"))
		r.cfg.Skills = testSkills

		r.log.userSays(t, "hello there, how is the deployment?")
		r.run()
		r.log.userSays(t, "Please DEPLOY the app")
		r.run()
		r.log.userSays(t, "deploy once more, ship it")
		r.run()
		r.log.userSays(t, "and with Docker")
		r.run()

		reqs := r.srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model calls, want 4", len(reqs))
		}
		counts := func(req llmtest.RecordedRequest) string {
			return fmt.Sprintf("%d %d %d", strings.Count(req.System, "REPO-NOTES"),
				strings.Count(req.System, "KNOWLEDGE-DEPLOY"), strings.Count(req.System, "KNOWLEDGE-DOCKER"))
		}
		want := []string{"1 0 0", "1 1 0", "1 1 0", "1 1 1"}
		for i, req := range reqs {
			if got := counts(req); got != want[i] {
				t.Errorf("call %d: repo, deploy, docker occur %s times in the system message, want %s", i, got, want[i])
			}
		}
		if !strings.Contains(reqs[0].System, "[BEGIN context from agents (AGENTS.md)]") ||
			!strings.Contains(reqs[1].System, `The skill "deploy" (from .openhands/microagents/deploy.md)`) {
			t.Errorf("system message: %s", reqs[1].System)
		}
		for i, req := range reqs {
			for _, m := range req.Messages {
				if strings.Contains(m.Text(), "KNOWLEDGE-") || strings.Contains(m.Text(), "REPO-NOTES") {
					t.Errorf("call %d: a skill is in a %s message", i, m.Role)
				}
			}
		}

		var activations []string
		for _, b := range r.log.bodies(event.KindStateUpdate) {
			if su := b.(*event.StateUpdateEvent); su.Key == StateActivatedSkills {
				activations = append(activations, string(su.Value))
			}
		}
		if !slices.Equal(activations, []string{`["deploy"]`, `["deploy","docker"]`}) {
			t.Errorf("activations recorded: %v", activations)
		}
		sp := r.log.bodies(event.KindSystemPrompt)
		if len(sp) != 1 {
			t.Fatalf("%d system prompt events", len(sp))
		}
		s := sp[0].(*event.SystemPromptEvent)
		if s.DynamicContext == nil || !strings.Contains(s.DynamicContext.Text, "REPO-NOTES") ||
			strings.Contains(s.SystemPrompt.Text, "REPO-NOTES") {
			t.Errorf("system prompt event: dynamic context %v", s.DynamicContext)
		}
	})
}

// TestKnowledgeSurvivesCondensation: once the message that triggered a skill is condensed
// away, the skill is still in the system message.
func TestKnowledgeSurvivesCondensation(t *testing.T) {
	var steps []llmtest.Step
	for i := range 4 {
		steps = append(steps, llmtest.Calls(llmtest.Call("terminal", fmt.Sprintf(`{"command":"echo %d"}`, i))))
	}
	r := newRig(t, 0, steps...)
	r.srv.Push(llmtest.Step{Func: func(req llmtest.RecordedRequest) llmtest.Step {
		if !isSummaryRequest(req) {
			t.Errorf("expected the summary request, got an agent call")
		}
		return llmtest.Text("USER_CONTEXT: the user wants a deployment.")
	}})
	r.srv.Push(llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)))
	r.cfg.Skills = testSkills
	r.cfg.CondenserMaxEvents = 8
	r.cfg.CondenserKeepFirst = 1
	r.log.userSays(t, "hi")
	r.log.userSays(t, "deploy it")
	if st := r.run(); st != StatusFinished {
		t.Fatalf("status %s", st)
	}
	reqs := r.srv.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Messages {
		if strings.Contains(m.Text(), "deploy it") {
			t.Fatalf("the triggering message was not condensed away: %+v", last.Messages)
		}
	}
	if strings.Count(last.System, "KNOWLEDGE-DEPLOY") != 1 || strings.Count(last.System, "REPO-NOTES") != 1 {
		t.Fatalf("skills after condensation: %s", last.System)
	}
	if len(r.log.bodies(event.KindCondensation)) != 1 {
		t.Fatal("no condensation happened")
	}
}

func TestNoSkillsNoContext(t *testing.T) {
	if repoContext(nil) != "" || repoContext(testSkills[1:]) != "" {
		t.Fatal("a repo context without always-on skills")
	}
	if knowledgeContext(testSkills, []string{"gone"}) != "" {
		t.Fatal("a skill the conversation does not have was rendered")
	}
}
