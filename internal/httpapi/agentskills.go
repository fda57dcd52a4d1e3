package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/skill"
)

// The agent server's POST /api/skills: the skills an agent in the sandbox would be given, as
// OpenHands' app server and SDK workspaces load them before they start a conversation. agentd
// reads what a conversation's start reads: the owner's own skills and the skill files of the
// workspace. It fetches no public skills and clones no organisation's repository.

// skillSources are the sources an agent server counts, each answered even when it gave none.
var skillSources = []string{"sandbox", "public", "user", "org", "project"}

func (a *API) agentServerSkills(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.AgentSkillsRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	dir := ""
	if req.ProjectDir != nil {
		dir = *req.ProjectDir
	}
	got, err := a.d.Conversations.LoadSandboxSkills(r.Context(), caller(r).ID, r.PathValue("sandbox_id"), req.LoadUser, req.LoadProject, dir)
	if err != nil {
		return err
	}
	for _, w := range got.Warnings {
		a.log.InfoContext(r.Context(), "skill skipped", "path", w.Path, "problem", w.Problem)
	}
	out := apitypes.AgentSkills{Skills: make([]apitypes.AgentSkill, len(got.Merged)), Sources: map[string]int{}}
	for _, src := range skillSources {
		out.Sources[src] = 0
	}
	out.Sources["user"], out.Sources["project"] = len(got.User), len(got.Project)
	for i, s := range got.Merged {
		out.Skills[i] = apitypes.AgentSkill{Name: s.Name, Type: apitypes.AgentSkillType(skillType(s)), Content: s.Content,
			Triggers: orEmpty(s.Triggers), Source: optString(s.Source), Description: optString(s.Description)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// skillType is how OpenHands' clients are told an agent is given a skill: repo skills always,
// knowledge skills (task skills too, as OpenHands says) on their triggers.
func skillType(s skill.Skill) string {
	if s.Type == skill.TypeRepo {
		return "repo"
	}
	return "knowledge"
}
