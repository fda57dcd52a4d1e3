package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/skill"
)

// The user's own skills (/api/v1/skills): agentd's design, as OpenHands keeps user skills in
// files of its own machine. Every conversation the user starts is given them.

func skillInfo(u skill.UserSkill) apitypes.SkillInfo {
	triggers := u.Triggers
	if triggers == nil {
		triggers = []string{}
	}
	return apitypes.SkillInfo{Name: u.Name, Type: apitypes.SkillType(u.Skill().Type), Triggers: triggers,
		Description: u.Description, Content: u.Content, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func (a *API) createSkill(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.SkillCreateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	u, err := a.d.Skills.Create(r.Context(), skill.UserSkill{UserID: caller(r).ID, Name: req.Name,
		Content: req.Content, Triggers: req.Triggers, Description: deref(req.Description)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, skillInfo(u))
	return nil
}

func (a *API) searchSkills(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.PageQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	us, next, err := a.d.Skills.Search(r.Context(), caller(r).ID, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	out := apitypes.SkillPage{Items: make([]apitypes.SkillInfo, len(us)), NextPageID: optString(next)}
	for i, u := range us {
		out.Items[i] = skillInfo(u)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) getSkill(w http.ResponseWriter, r *http.Request) error {
	u, err := a.d.Skills.Get(r.Context(), caller(r).ID, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, skillInfo(u))
	return nil
}

func (a *API) updateSkill(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.SkillUpdateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	u, err := a.d.Skills.Update(r.Context(), skill.UserSkill{UserID: caller(r).ID, Name: r.PathValue("name"),
		Content: req.Content, Triggers: req.Triggers, Description: deref(req.Description)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, skillInfo(u))
	return nil
}

func (a *API) deleteSkill(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Skills.Delete(r.Context(), caller(r).ID, r.PathValue("name")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
