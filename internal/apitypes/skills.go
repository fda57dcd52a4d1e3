package apitypes

import (
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/agentd/agentd/internal/wire"
)

// SkillType says when the agent is given a skill.
type SkillType string

// EnumValues lists the values.
func (SkillType) EnumValues() []string { return []string{"repo", "knowledge"} }

// SkillCreateRequest is the body of POST /api/v1/skills.
type SkillCreateRequest struct {
	Name     string   `json:"name" wire:"required,minlen=1,maxlen=64" doc:"Lower-case letters, digits, '-' and '_', starting with a letter or digit; unique among the user's skills."`
	Content  string   `json:"content" wire:"required,minlen=1,maxlen=65536" doc:"The guidance, in Markdown."`
	Triggers []string `json:"triggers" wire:"maxlen=64" doc:"Words that give the agent the skill once a user's message holds one (ignoring case, as whole words); none gives it always."`
	// Description is shown in listings; the agent is not given it.
	Description *string `json:"description" wire:"maxlen=1024"`
}

// WireStrict rejects unknown keys.
func (SkillCreateRequest) WireStrict() {}

var skillNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// ValidSkillName reports whether name may name a user's skill.
func ValidSkillName(name string) bool { return len(name) <= 64 && skillNamePattern.MatchString(name) }

// ValidateWire checks the name's spelling and what minlen lets through.
func (r *SkillCreateRequest) ValidateWire(c *wire.Checker) {
	if r.Name != "" && !ValidSkillName(r.Name) {
		c.ValueError("a skill name holds only lower-case letters, digits, '-' and '_', and starts with a letter or digit", "name")
	}
	checkSkillBody(c, r.Content, r.Triggers)
}

// SkillUpdateRequest is the body of PUT /api/v1/skills/{name}: the skill's new content,
// triggers and description (absent triggers and description clear them).
type SkillUpdateRequest struct {
	Content     string   `json:"content" wire:"required,minlen=1,maxlen=65536"`
	Triggers    []string `json:"triggers" wire:"maxlen=64"`
	Description *string  `json:"description" wire:"maxlen=1024"`
}

// WireStrict rejects unknown keys.
func (SkillUpdateRequest) WireStrict() {}

// ValidateWire checks what minlen lets through.
func (r *SkillUpdateRequest) ValidateWire(c *wire.Checker) { checkSkillBody(c, r.Content, r.Triggers) }

func checkSkillBody(c *wire.Checker, content string, triggers []string) {
	if content != "" && strings.TrimSpace(content) == "" {
		c.ValueError("content cannot be blank", "content")
	}
	for i, t := range triggers {
		switch {
		case strings.TrimSpace(t) == "":
			c.ValueError("a trigger cannot be blank", "triggers", i)
		case len([]rune(t)) > 100:
			c.ValueError("a trigger has at most 100 characters", "triggers", i)
		case strings.ContainsFunc(t, unicode.IsControl):
			c.ValueError("a trigger cannot hold control characters", "triggers", i)
		}
	}
}

// SkillInfo is one of the user's skills.
type SkillInfo struct {
	Name        string    `json:"name"`
	Type        SkillType `json:"type" doc:"repo: always given to the agent; knowledge: given once a user's message holds a trigger."`
	Triggers    []string  `json:"triggers"`
	Description string    `json:"description"`
	Content     string    `json:"content"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// SkillPage is a page of the user's skills, oldest first.
type SkillPage struct {
	Items      []SkillInfo `json:"items"`
	NextPageID *string     `json:"next_page_id"`
}

// MicroagentConversationsQuery is the query of GET /api/microagent-management/conversations.
type MicroagentConversationsQuery struct {
	SelectedRepository string `query:"selected_repository" wire:"required"`
	PageID             string `query:"page_id"`
	Limit              int    `query:"limit" wire:"min=1,max=100,default=20"`
}
