package conversation

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/internal/paging"
)

// TriggerMicroagentManagement is the trigger of the conversations that write a microagent.
const TriggerMicroagentManagement = "microagent_management"

// MicroagentPrompt is the first message of a conversation whose task is to write a microagent
// for repo (owner/name) about title; title may be empty.
func MicroagentPrompt(repo, title string) string {
	about := ""
	if title != "" {
		about = fmt.Sprintf(" about %q", title)
	}
	return fmt.Sprintf("Write a microagent for the repository %s%s. A microagent is a Markdown file in the "+
		"repository's .openhands/microagents/ directory that gives agents working on the repository the knowledge "+
		"they need; agents are given it whenever a user's message names one of its triggers, or always when it has none.\n\n"+
		"1. Explore the repository to learn what an agent must know%s: where things are, the commands to run, the "+
		"conventions to follow, the pitfalls.\n"+
		"2. Write .openhands/microagents/<short-name>.md. Start it with a YAML frontmatter between two \"---\" lines "+
		"holding name (the short name) and triggers (a list of the words a user would use when the guidance applies; "+
		"leave triggers out only if every task on the repository needs it). Below it, state the guidance concisely, "+
		"with concrete paths and commands.\n"+
		"3. Commit the file on a new branch, push it, and open a pull request for it.",
		repo, about, about)
}

// MicroagentConversations pages through the owner's conversations that write a microagent for
// the repository, newest first. As in OpenHands, a conversation whose last pull request is
// closed or merged is left out, as far as Options.PullRequestOpen can tell: one whose state is
// unknown stays. A page may therefore hold fewer than q.Limit conversations.
func (s *Service) MicroagentConversations(ctx context.Context, ownerID, repository string, q paging.Query) ([]View, string, error) {
	f := Filter{SelectedRepository: repository, Trigger: TriggerMicroagentManagement, IncludeSub: true}
	vs, next, err := s.o.Store.ListConversations(ctx, ownerID, f, q)
	if err != nil {
		return nil, "", err
	}
	out := vs[:0]
	for _, v := range vs {
		if s.pullRequestDone(ctx, v) {
			continue
		}
		out = append(out, v)
	}
	return out, next, nil
}

// pullRequestDone reports whether the conversation's last pull request is known to be closed
// or merged.
func (s *Service) pullRequestDone(ctx context.Context, v View) bool {
	if s.o.PullRequestOpen == nil || len(v.PRNumbers) == 0 || v.SelectedRepository == nil || v.GitProvider == nil {
		return false
	}
	open, err := s.o.PullRequestOpen(ctx, v.OwnerID, *v.GitProvider, *v.SelectedRepository, v.PRNumbers[len(v.PRNumbers)-1])
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Info("pull request state unknown; the conversation stays listed", "conversation_id", v.ID, "err", err)
		}
		return false
	}
	return !open
}
