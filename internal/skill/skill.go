// Package skill holds skills, which OpenHands called microagents: guidance written in Markdown
// that the agent is given either always (repository skills: the repository's own instructions,
// such as AGENTS.md) or from the moment a user's message names one of its trigger words
// (knowledge and task skills). The package parses skill files with their YAML frontmatter,
// tells where a workspace keeps them, matches trigger words, and keeps each user's own skills.
package skill

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/paging"
)

// Type says when the agent is given a skill.
type Type string

// Skill types, as OpenHands infers them from the frontmatter.
const (
	// TypeRepo skills are always in the agent's system context.
	TypeRepo Type = "repo"
	// TypeKnowledge skills join the context once a user's message holds one of their
	// triggers.
	TypeKnowledge Type = "knowledge"
	// TypeTask skills are knowledge skills that take inputs; they trigger on "/<name>" and
	// tell the agent to ask the user for the inputs it lacks.
	TypeTask Type = "task"
)

// Skill is one loaded skill.
type Skill struct {
	Name string
	Type Type
	// Triggers are the words that activate a knowledge or task skill; none for repo skills.
	Triggers []string
	// Description is the frontmatter's description, at most MaxDescription bytes.
	Description string
	// Content is the Markdown body the agent is given.
	Content string
	// Source says where the skill came from: its path in the workspace, or "user" for a
	// skill the user keeps in agentd.
	Source string
	// MCPServers are the tool servers the skill declares (mcp_tools). As in OpenHands, those
	// of repo skills join the conversation's MCP servers; the others are not used.
	MCPServers []MCPServer
}

// AlwaysOn reports whether the skill belongs in the system context from the start.
func (s Skill) AlwaysOn() bool { return s.Type == TypeRepo }

// SourceUser is the Source of a user's own skills.
const SourceUser = "user"

// Sentinel errors.
var (
	ErrNotFound = errors.New("skill not found")
	ErrExists   = errors.New("a skill with that name exists")
	// ErrTooMany: the user keeps as many skills as allowed.
	ErrTooMany = errors.New("too many skills")
)

// UserSkill is a skill a user keeps in agentd, given to every conversation they start.
type UserSkill struct {
	UserID      string
	Name        string
	Triggers    []string
	Description string
	Content     string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Skill returns the skill as conversations load it.
func (u UserSkill) Skill() Skill {
	s := Skill{Name: u.Name, Type: TypeRepo, Triggers: u.Triggers, Description: u.Description,
		Content: u.Content, Source: SourceUser}
	if len(u.Triggers) > 0 {
		s.Type = TypeKnowledge
	}
	return s
}

// Store persists users' skills and the skills each conversation was started with. Safe for
// concurrent use. userID scopes the user skill calls: another user's skills are ErrNotFound
// and never listed.
type Store interface {
	// CreateUserSkill stores a new skill: ErrExists when the user has one of that name,
	// ErrTooMany when the user has limit skills already (checked in the same transaction).
	CreateUserSkill(ctx context.Context, s UserSkill, limit int) error
	GetUserSkill(ctx context.Context, userID, name string) (UserSkill, error)
	// ListUserSkills pages through the user's skills, oldest first (created_at, name).
	ListUserSkills(ctx context.Context, userID string, q paging.Query) (skills []UserSkill, next string, err error)
	// UpdateUserSkill writes Triggers, Description, Content and UpdatedAt; ErrNotFound when
	// the user has no skill of that name.
	UpdateUserSkill(ctx context.Context, s UserSkill) error
	DeleteUserSkill(ctx context.Context, userID, name string) error

	// PutConversationSkills replaces the skills a conversation was started with, in order, in
	// one transaction. They go when the conversation is deleted.
	PutConversationSkills(ctx context.Context, conversationID string, skills []Skill) error
	// ConversationSkills returns them in the order they were put; none for a conversation
	// that has none or does not exist.
	ConversationSkills(ctx context.Context, conversationID string) ([]Skill, error)
}
