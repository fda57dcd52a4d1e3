package conversation_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// TestMicroagentConversationsLeaveOutDonePullRequests: as in OpenHands, the listing drops the
// conversations whose last pull request is closed or merged, and keeps those whose state is
// open or cannot be told.
func TestMicroagentConversationsLeaveOutDonePullRequests(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(id string, i int, trigger, repo string, prs ...int) {
		t.Helper()
		c := conversation.Conversation{ID: id, OwnerID: "alice", Version: conversation.V0, Title: id,
			SelectedRepository: &repo, GitProvider: ptr("github"), Trigger: &trigger, PRNumbers: prs,
			CreatedAt: t0.Add(time.Duration(i) * time.Second), UpdatedAt: t0}
		task := conversation.StartTask{ID: "task-" + id, OwnerID: "alice", Status: conversation.TaskReady,
			ConversationID: id, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt}
		if err := st.CreateConversation(t.Context(), c, task, nil, conversation.Claim{}); err != nil {
			t.Fatal(err)
		}
	}
	const mm = conversation.TriggerMicroagentManagement
	add("no-pr", 1, mm, "acme/api")
	add("open", 2, mm, "acme/api", 3)
	add("merged", 3, mm, "acme/api", 4, 5) // its first PR is open, its last merged
	add("unknown", 4, mm, "acme/api", 6)
	add("gui", 5, "gui", "acme/api")
	add("web", 6, mm, "acme/web")

	var asked []int
	s := conversation.NewService(conversation.Options{Store: st,
		PullRequestOpen: func(_ context.Context, owner, provider, repo string, n int) (bool, error) {
			if owner != "alice" || provider != "github" || repo != "acme/api" {
				t.Errorf("asked about %s %s %s #%d", owner, provider, repo, n)
			}
			asked = append(asked, n)
			switch n {
			case 3:
				return true, nil
			case 5:
				return false, nil
			}
			return false, errors.New("the provider did not answer")
		}})
	t.Cleanup(s.Close)
	vs, next, err := s.MicroagentConversations(t.Context(), "alice", "acme/api", paging.Query{Limit: 20})
	if err != nil || next != "" {
		t.Fatalf("list: %v, next %q", err, next)
	}
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	if !slices.Equal(ids, []string{"unknown", "open", "no-pr"}) {
		t.Errorf("listed %v", ids)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []int{3, 5, 6}) {
		t.Errorf("asked about pull requests %v", asked)
	}
}

func ptr[T any](v T) *T { return &v }
