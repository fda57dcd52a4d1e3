package storetest

import (
	"fmt"
	"testing"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
)

func newUserSkill(owner, name string, i int, triggers ...string) skill.UserSkill {
	return skill.UserSkill{UserID: owner, Name: name, Triggers: triggers, Description: "about " + name,
		Content: "Guidance of " + name + ".", CreatedAt: at(i), UpdatedAt: at(i)}
}

func testUserSkills(t *testing.T, s store.Store) {
	ctx := t.Context()
	style := newUserSkill(ownerA, "style", 1)
	deploy := newUserSkill(ownerA, "deploy", 2, "deploy", "/release")
	ok(t, "create style", s.CreateUserSkill(ctx, style, 10))
	ok(t, "create deploy", s.CreateUserSkill(ctx, deploy, 10))
	ok(t, "create B's style", s.CreateUserSkill(ctx, newUserSkill(ownerB, "style", 3), 10))
	is(t, "create style again", s.CreateUserSkill(ctx, newUserSkill(ownerA, "style", 4), 10), skill.ErrExists)

	got, err := s.GetUserSkill(ctx, ownerA, "deploy")
	ok(t, "get deploy", err)
	equal(t, "deploy", got, deploy)
	_, err = s.GetUserSkill(ctx, ownerB, "deploy")
	is(t, "B gets A's skill", err, skill.ErrNotFound)

	list, next, err := s.ListUserSkills(ctx, ownerA, paging.Query{})
	ok(t, "list A's skills", err)
	equal(t, "A's skills, oldest first", list, []skill.UserSkill{style, deploy})
	if next != "" {
		t.Fatalf("next page %q of a short listing", next)
	}

	deploy.Triggers, deploy.Content, deploy.Description, deploy.UpdatedAt = nil, "New guidance.", "", at(5)
	ok(t, "update deploy", s.UpdateUserSkill(ctx, deploy))
	got, err = s.GetUserSkill(ctx, ownerA, "deploy")
	ok(t, "get updated deploy", err)
	equal(t, "updated deploy", got, deploy)
	b := deploy
	b.UserID = ownerB
	is(t, "B updates A's skill", s.UpdateUserSkill(ctx, b), skill.ErrNotFound)

	is(t, "B deletes A's skill", s.DeleteUserSkill(ctx, ownerB, "deploy"), skill.ErrNotFound)
	ok(t, "delete deploy", s.DeleteUserSkill(ctx, ownerA, "deploy"))
	is(t, "delete deploy again", s.DeleteUserSkill(ctx, ownerA, "deploy"), skill.ErrNotFound)
	_, err = s.GetUserSkill(ctx, ownerA, "deploy")
	is(t, "get deleted skill", err, skill.ErrNotFound)
	list, _, err = s.ListUserSkills(ctx, ownerB, paging.Query{})
	ok(t, "list B's skills", err)
	if len(list) != 1 || list[0].UserID != ownerB {
		t.Fatalf("B's skills: %+v", list)
	}
}

func testUserSkillLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 3 {
		ok(t, "create skill", s.CreateUserSkill(ctx, newUserSkill(ownerA, fmt.Sprintf("s%d", i), i), 3))
	}
	is(t, "create past the limit", s.CreateUserSkill(ctx, newUserSkill(ownerA, "s3", 3), 3), skill.ErrTooMany)
	is(t, "an existing name past the limit", s.CreateUserSkill(ctx, newUserSkill(ownerA, "s0", 3), 3), skill.ErrExists)
	ok(t, "another user's first", s.CreateUserSkill(ctx, newUserSkill(ownerB, "s3", 3), 3))
	list, _, err := s.ListUserSkills(ctx, ownerA, paging.Query{})
	ok(t, "list", err)
	if len(list) != 3 {
		t.Fatalf("%d skills after a refused create, want 3", len(list))
	}
}

func testUserSkillPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	var want []skill.UserSkill
	for i := range 7 {
		// Two skills per second, so that names break ties.
		u := newUserSkill(ownerA, fmt.Sprintf("skill-%d", 6-i), i/2)
		ok(t, "create skill", s.CreateUserSkill(ctx, u, 100))
		want = append(want, u)
	}
	// Sorted by (created_at, name).
	for i := 0; i+1 < len(want); i += 2 {
		want[i], want[i+1] = want[i+1], want[i]
	}
	got, pages := allPages(t, 2, func(q paging.Query) ([]skill.UserSkill, string, error) {
		return s.ListUserSkills(ctx, ownerA, q)
	})
	equal(t, "skills over pages", got, want)
	if pages != 4 {
		t.Fatalf("%d pages, want 4", pages)
	}
	_, _, err := s.ListUserSkills(ctx, ownerA, paging.Query{Cursor: "not a cursor"})
	is(t, "bad cursor", err, paging.ErrBadCursor)
}

func testConversationSkills(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-skills", 1)
	createConversation(t, s, c)
	other := newConversation(ownerA, "conv-other", 2)
	createConversation(t, s, other)

	none, err := s.ConversationSkills(ctx, c.ID)
	ok(t, "skills of a new conversation", err)
	if len(none) != 0 {
		t.Fatalf("a new conversation has skills: %+v", none)
	}
	skills := []skill.Skill{
		{Name: "agents", Type: skill.TypeRepo, Content: "Run make.", Source: "AGENTS.md"},
		{Name: "deploy", Type: skill.TypeKnowledge, Triggers: []string{"deploy", "ship it"}, Description: "d",
			Content: "Deploy with care.", Source: ".openhands/microagents/deploy.md"},
		{Name: "mine", Type: skill.TypeRepo, Content: "Mine.", Source: skill.SourceUser},
		{Name: "tools", Type: skill.TypeRepo, Content: "Use the tools.", Source: ".openhands/microagents/tools.md", MCPServers: []skill.MCPServer{
			{Name: "fetch", Transport: skill.MCPStdio, Command: "uvx", Args: []string{"mcp-server-fetch"}, Env: map[string]string{"LOG": "1"}},
			{Transport: skill.MCPSHTTP, URL: "https://mcp.example.com/mcp", TimeoutSeconds: 30},
		}},
	}
	ok(t, "put skills", s.PutConversationSkills(ctx, c.ID, skills))
	ok(t, "put the other's skills", s.PutConversationSkills(ctx, other.ID, skills[:1]))
	got, err := s.ConversationSkills(ctx, c.ID)
	ok(t, "get skills", err)
	equal(t, "skills in order", got, skills)

	ok(t, "replace skills", s.PutConversationSkills(ctx, c.ID, skills[1:2]))
	got, err = s.ConversationSkills(ctx, c.ID)
	ok(t, "get replaced skills", err)
	equal(t, "replaced skills", got, skills[1:2])

	fails(t, "put skills of no conversation", s.PutConversationSkills(ctx, "conv-missing", skills))
	got, err = s.ConversationSkills(ctx, "conv-missing")
	ok(t, "skills of no conversation", err)
	if len(got) != 0 {
		t.Fatalf("a failed put left skills: %+v", got)
	}

	ok(t, "delete conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	got, err = s.ConversationSkills(ctx, c.ID)
	ok(t, "skills of a deleted conversation", err)
	if len(got) != 0 {
		t.Fatalf("skills outlived their conversation: %+v", got)
	}
	got, err = s.ConversationSkills(ctx, other.ID)
	ok(t, "the other's skills", err)
	equal(t, "the other's skills", got, skills[:1])
}
