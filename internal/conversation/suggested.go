package conversation

import (
	"errors"
	"fmt"
)

// ErrUnsupportedTask: a suggested task type or provider has no prompt.
var ErrUnsupportedTask = errors.New("unsupported suggested task")

// providerTerms are the words a prompt uses for one provider.
type providerTerms struct {
	request  string // what a change request is called
	api      string
	tokenEnv string
	ci       string
}

var terms = map[string]providerTerms{
	"github":    {request: "pull request (PR)", api: "GitHub API", tokenEnv: "GITHUB_TOKEN", ci: "GitHub Actions"},
	"gitlab":    {request: "merge request (MR)", api: "GitLab API", tokenEnv: "GITLAB_TOKEN", ci: "GitLab CI pipelines"},
	"bitbucket": {request: "pull request (PR)", api: "Bitbucket API", tokenEnv: "BITBUCKET_TOKEN", ci: "Bitbucket Pipelines"},
}

// SuggestedTaskPrompt writes the first message for a suggested task. Task types without a
// prompt, and providers without known terms, return ErrUnsupportedTask.
func SuggestedTaskPrompt(provider, taskType, repo string, number int) (string, error) {
	t, ok := terms[provider]
	if !ok {
		return "", fmt.Errorf("%w: provider %q has no task prompts", ErrUnsupportedTask, provider)
	}
	opening := fmt.Sprintf("Work on %s #%d in the repository %s. Read its details with the %s, "+
		"authenticating with the token in $%s; check out its branch and compare it with the base branch to understand what it is for.",
		t.request, number, repo, t.api, t.tokenEnv)
	switch taskType {
	case "MERGE_CONFLICTS":
		return opening + " Then resolve its merge conflicts, reading the commit history where the intent of a change is unclear, and push the result.", nil
	case "FAILING_CHECKS":
		return opening + fmt.Sprintf(" Then find the %s checks that fail on its latest commit, reproduce each failure locally, fix it and push. "+
			"Wait for the checks to run again (poll every 30 seconds) and repeat until they pass.", t.ci), nil
	case "UNRESOLVED_COMMENTS":
		return opening + " Then read every review comment, address each one that is not yet addressed, and commit the changes to the same branch.", nil
	case "OPEN_ISSUE":
		return fmt.Sprintf("Work on issue #%d in the repository %s. Read the issue and its comments with the %s, "+
			"authenticating with the token in $%s. Create a new branch, investigate, make the changes the issue asks for, "+
			"and open a %s that references the issue.", number, repo, t.api, t.tokenEnv, t.request), nil
	}
	return "", fmt.Errorf("%w: task type %q has no prompt", ErrUnsupportedTask, taskType)
}
