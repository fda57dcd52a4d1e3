package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/tool/providertool"
)

// ErrUnsupportedTask: a suggested task of a type that has no prompt.
var ErrUnsupportedTask = errors.New("unsupported suggested task")

// Suggested task types (OpenHands' TaskType), as GET /api/user/suggested-tasks gives them.
const (
	TaskOpenIssue          = "OPEN_ISSUE"
	TaskMergeConflicts     = "MERGE_CONFLICTS"
	TaskFailingChecks      = "FAILING_CHECKS"
	TaskUnresolvedComments = "UNRESOLVED_COMMENTS"
	TaskOpenPR             = "OPEN_PR"
)

// SuggestedTask is an issue or pull request a conversation starts to work on.
type SuggestedTask struct {
	// Provider is the user's name of the provider; "" means the first of theirs whose token
	// reaches the repository.
	Provider string
	// Type is one of the Task* constants; "" means TaskOpenIssue.
	Type       string
	Repository string
	Number     int
	// Title is the client's idea of the title; the provider's is used when it answers.
	Title string
}

// SuggestedTaskPrompt writes the first message of a conversation on a suggested task: what to
// do, in the provider's words, pointing the agent at the provider tools it will have, followed
// by the issue or pull request (with its comments, and for a pull request its checks and
// reviews) as the provider has it now, fetched with the owner's token. An issue or pull
// request the provider does not know is a *FieldError; a provider that fails otherwise leaves
// the content out, and the message says to read it with the tool.
func (s *Service) SuggestedTaskPrompt(ctx context.Context, ownerID string, t SuggestedTask) (string, error) {
	if t.Type == "" {
		t.Type = TaskOpenIssue
	}
	switch t.Type {
	case TaskOpenIssue, TaskMergeConflicts, TaskFailingChecks, TaskUnresolvedComments, TaskOpenPR:
	default:
		return "", fmt.Errorf("%w: task type %q has no prompt", ErrUnsupportedTask, t.Type)
	}
	if s.o.Providers == nil {
		return taskPrompt(t, providertool.WordsFor(providerFamily(t.Provider)), "", nil), nil
	}
	provider, repo, err := s.providerOf(ctx, ownerID, &t.Provider, t.Repository)
	if err != nil {
		return "", err
	}
	t.Provider, t.Repository = provider, repo
	api, err := s.o.Providers.API(ctx, ownerID, provider)
	if err != nil {
		return "", err
	}
	w := providertool.WordsFor(api.Family())
	if t.Type == TaskOpenIssue && !w.Issues {
		return "", fmt.Errorf("%w: %s has no issues", ErrUnsupportedTask, w.Provider)
	}
	var content string
	var pr *gitprovider.PullRequest
	if t.Type == TaskOpenIssue {
		var issue gitprovider.Issue
		if issue, err = api.Issue(ctx, repo, t.Number); err == nil {
			if issue.Repository == "" {
				issue.Repository = repo
			}
			t.Title, content = issue.Title, providertool.IssueText(issue)
		}
	} else {
		var got gitprovider.PullRequest
		if got, err = api.PullRequest(ctx, repo, t.Number); err == nil {
			if got.Repository == "" {
				got.Repository = repo
			}
			t.Title, content, pr = got.Title, providertool.PullRequestText(got, w), &got
		}
	}
	switch {
	case errors.Is(err, gitprovider.ErrNotFound):
		what := "issue #"
		if t.Type != TaskOpenIssue {
			what = w.Request + " " + w.Sigil
		}
		return "", &FieldError{Field: "suggested_task", Msg: fmt.Sprintf("%s%d was not found in %s at %s", what, t.Number, repo, w.Provider)}
	case err != nil && ctx.Err() != nil:
		return "", err
	case err != nil:
		// The conversation can still start: the agent reads it with the tool.
		s.log.Warn("suggested task: the provider did not give the content", "repository", repo, "number", t.Number, "err", err)
	}
	return taskPrompt(t, w, content, pr), nil
}

// providerFamily is the API family a provider's public service speaks.
func providerFamily(provider string) string {
	switch provider {
	case gitprovider.GitLab:
		return gitprovider.FamilyGitLab
	case gitprovider.Bitbucket:
		return gitprovider.FamilyBitbucket
	}
	return gitprovider.FamilyGitHub
}

// taskPrompt is agentd's task template: the task, the content fetched (or where to read it),
// and the steps. pr is the pull request read, when there is one.
func taskPrompt(t SuggestedTask, w Words, content string, pr *gitprovider.PullRequest) string {
	var b strings.Builder
	readTool := w.ReadRequestTool()
	kind := w.Request
	ref := fmt.Sprintf("%s%d", w.Sigil, t.Number)
	if t.Type == TaskOpenIssue {
		readTool, kind, ref = providertool.ReadIssueTool, "issue", fmt.Sprintf("#%d", t.Number)
	}
	title := ""
	if t.Title != "" {
		title = fmt.Sprintf(": %q", t.Title)
	}
	fmt.Fprintf(&b, "You are working on %s %s in the repository %s on %s%s.", kind, ref, t.Repository, w.Provider, title)
	head, base := "its branch", "its base branch"
	if pr != nil {
		head, base = "the branch "+pr.Head, pr.Base
	}
	switch t.Type {
	case TaskMergeConflicts:
		fmt.Fprintf(&b, " It has merge conflicts with %s: resolve them.", base)
	case TaskFailingChecks:
		fmt.Fprintf(&b, " Its checks (%s) fail: make them pass.", w.CI)
	case TaskUnresolvedComments:
		b.WriteString(" Reviewers left comments that are not addressed yet: address them.")
	case TaskOpenPR:
		fmt.Fprintf(&b, " Take it forward to where it can be merged.")
	}
	b.WriteString("\n\n")
	if content != "" {
		fmt.Fprintf(&b, "The %s as %s has it now:\n\n<%s>\n%s\n</%s>\n\n", kind, w.Provider, strings.ReplaceAll(kind, " ", "_"), content, strings.ReplaceAll(kind, " ", "_"))
	} else {
		fmt.Fprintf(&b, "Its content could not be fetched from %s when the conversation started: read it first with the %s tool.\n\n", w.Provider, readTool)
	}
	fmt.Fprintf(&b, "You have tools that call %s for you with the user's account: %s reads the %s again (with its comments", w.Provider, readTool, kind)
	if t.Type != TaskOpenIssue {
		b.WriteString(", checks and reviews")
	}
	fmt.Fprintf(&b, "), and %s opens a %s. There is no %s token in the sandbox: use these tools for %s's API.\n\n", w.CreateRequestTool(), w.Request, w.Provider, w.Provider)
	steps := taskSteps(t, w, head, base)
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Words are a provider's words for things (pull request or merge request, its CI).
type Words = providertool.Words

func taskSteps(t SuggestedTask, w Words, head, base string) []string {
	checkout := fmt.Sprintf("Check out %s and compare it with %s to understand what the change is for.", head, base)
	switch t.Type {
	case TaskMergeConflicts:
		return []string{checkout,
			fmt.Sprintf("Merge %s into it and resolve the conflicts, keeping the intent of both sides; read the commit history where the intent of a change is unclear.", base),
			fmt.Sprintf("Run the tests, commit, and push to %s. Read the %s again with %s to check that the conflicts are gone.", head, w.Request, w.ReadRequestTool())}
	case TaskFailingChecks:
		return []string{checkout,
			"For each failing check above, find what it runs (the CI configuration in the repository), reproduce the failure in the sandbox, and fix it.",
			fmt.Sprintf("Commit and push to %s. The checks run again: read the %s with %s every minute or so until they have finished, and repeat until they pass.", head, w.Request, w.ReadRequestTool())}
	case TaskUnresolvedComments:
		return []string{checkout,
			"Address every review comment above that is not resolved or answered yet: change the code where the reviewer is right, and say why not where they are not.",
			fmt.Sprintf("Commit the changes and push them to %s.", head)}
	case TaskOpenPR:
		return []string{checkout,
			"Find what it still needs: failing checks, merge conflicts, review comments not yet addressed, missing tests.",
			fmt.Sprintf("Do what you can of it, commit and push to %s, and say what is left.", head)}
	}
	return []string{
		"Investigate the issue in the repository: reproduce it where you can.",
		"Create a new branch and make the changes the issue asks for, with tests where the repository has them.",
		fmt.Sprintf("Commit, push the branch, and open a %s with %s whose description says what changed and holds \"Closes #%d\".", w.Request, w.CreateRequestTool(), t.Number),
	}
}
