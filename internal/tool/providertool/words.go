package providertool

import "github.com/agentd/agentd/internal/gitprovider"

// Words are how a provider's own documentation names things, so that what the model and the
// user read sounds like the provider they use.
type Words struct {
	// Provider is the product's name: GitHub, GitLab, Bitbucket, Bitbucket Data Center.
	Provider string
	// Request is what a change request is called there (pull request, merge request); Short
	// is its abbreviation (PR, MR) and Sigil the sign before its number in the web pages.
	Request, Short, Sigil string
	// CI names where the checks of a change come from.
	CI string
	// Issues says whether the provider's API has issues (Bitbucket Data Center leaves them to
	// Jira).
	Issues bool
}

// WordsFor returns the words of an API family (gitprovider.FamilyGitHub, ...); an unknown
// family gets GitHub's, the most common.
func WordsFor(family string) Words {
	switch family {
	case gitprovider.FamilyGitLab:
		return Words{Provider: "GitLab", Request: "merge request", Short: "MR", Sigil: "!", CI: "GitLab CI/CD pipelines", Issues: true}
	case gitprovider.FamilyBitbucket:
		return Words{Provider: "Bitbucket", Request: "pull request", Short: "PR", Sigil: "#", CI: "Bitbucket Pipelines", Issues: true}
	case gitprovider.FamilyBitbucketDC:
		return Words{Provider: "Bitbucket Data Center", Request: "pull request", Short: "PR", Sigil: "#", CI: "the builds reported to Bitbucket"}
	}
	return Words{Provider: "GitHub", Request: "pull request", Short: "PR", Sigil: "#", CI: "GitHub Actions", Issues: true}
}

// slug is Request as it appears in tool names.
func (w Words) slug() string {
	if w.Short == "MR" {
		return "merge_request"
	}
	return "pull_request"
}

// ReadRequestTool is the name of the tool that reads a pull (merge) request.
func (w Words) ReadRequestTool() string { return "read_" + w.slug() }

// CreateRequestTool is the name of the tool that opens a pull (merge) request.
func (w Words) CreateRequestTool() string { return "create_" + w.slug() }

// ReadIssueTool is the name of the tool that reads an issue.
const ReadIssueTool = "read_issue"
