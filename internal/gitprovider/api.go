package gitprovider

import (
	"context"
	"time"
)

// API families: the REST dialect a provider's server speaks. A provider name says whose
// token it is; the family says how to talk to its host (an enterprise_sso host speaks one of
// these, found by probing).
const (
	FamilyGitHub      = "github"                // github.com and GitHub Enterprise Server
	FamilyGitLab      = "gitlab"                // gitlab.com and self-managed GitLab
	FamilyBitbucket   = "bitbucket"             // Bitbucket Cloud
	FamilyBitbucketDC = "bitbucket_data_center" // Bitbucket Data Center (and Server)
)

// API is one provider account: the calls agentd makes with one user's token. Every method
// may run concurrently. Repository names are as the provider writes them: owner/name,
// group/subgroup/name on GitLab, PROJECT/slug on Bitbucket Data Center. Errors are *Error.
type API interface {
	// Family is the API family the account's host speaks.
	Family() string
	// User is the token's owner; it is how a token is checked.
	User(ctx context.Context) (User, error)
	// Repository reads one repository: whether the token reaches it, its default branch and
	// its clone URL.
	Repository(ctx context.Context, name string) (Repository, error)
	// Repositories lists the repositories the user may work on, most recently pushed first.
	// Pages count from 1.
	Repositories(ctx context.Context, page, perPage int) (Page[Repository], error)
	// Branches lists a repository's branches.
	Branches(ctx context.Context, repo string, page, perPage int) (Page[Branch], error)
	// AssignedIssues lists the open issues assigned to the user, without comments.
	AssignedIssues(ctx context.Context) ([]Issue, error)
	// OpenPullRequests lists the user's own open pull (merge) requests with what needs their
	// attention.
	OpenPullRequests(ctx context.Context) ([]PullRequestStatus, error)
	// Issue reads an issue with its comments.
	Issue(ctx context.Context, repo string, number int) (Issue, error)
	// PullRequest reads a pull (merge) request with its checks, reviews and review comments.
	PullRequest(ctx context.Context, repo string, number int) (PullRequest, error)
	// CreatePullRequest opens a pull (merge) request.
	CreatePullRequest(ctx context.Context, repo string, pr NewPullRequest) (PullRequest, error)
	// Installations lists what the user's repositories live under, as OpenHands lists them:
	// the ids of the GitHub App installations the token may use (none for a token that is
	// no GitHub App user token: GitHub lets only those list them), the slugs of the user's
	// Bitbucket workspaces, the keys of the Bitbucket Data Center projects they see. GitLab
	// has no such thing: ErrUnsupported.
	Installations(ctx context.Context, page, perPage int) (Page[string], error)
}

// User is a provider account.
type User struct {
	ID        string
	Login     string
	Name      string
	Email     string // "" when the provider does not tell it
	AvatarURL string
	Company   string // "" when the provider keeps none (Bitbucket) or the user left it blank
}

// Repository is a repository as the provider describes it.
type Repository struct {
	ID            string
	FullName      string
	Private       bool
	DefaultBranch string
	// CloneURL is the provider's https (or http) clone URL; it may name a user (Bitbucket
	// writes one in), never a secret.
	CloneURL  string
	WebURL    string
	Stars     int
	PushedAt  *time.Time
	OwnerType string // "user" or "organization"
}

// Branch is one branch of a repository.
type Branch struct {
	Name      string
	CommitSHA string
	Protected bool
	LastPush  *time.Time
}

// Page is one page of a listing. Total is the number of items in all pages, when the
// provider tells it.
type Page[T any] struct {
	Items   []T
	HasNext bool
	Total   *int
}

// Issue is an issue, with its comments when read on its own.
type Issue struct {
	Repository string
	Number     int
	Title      string
	Body       string
	State      string // open or closed
	Author     string
	URL        string
	Comments   []Comment
}

// Comment is a comment on an issue or a pull request. Path and Line place a review comment
// in the diff; Resolved is set where the provider tracks it.
type Comment struct {
	Author    string
	Body      string
	Path      string
	Line      int
	Resolved  *bool
	CreatedAt *time.Time
}

// PullRequest is a pull request (GitLab: merge request).
type PullRequest struct {
	Repository string
	Number     int
	Title      string
	Body       string
	State      string // open, closed or merged
	Author     string
	URL        string
	Head       string // the branch with the changes
	Base       string // the branch they go into
	HeadSHA    string
	Conflicts  bool
	Checks     []Check
	Reviews    []Review
	Comments   []Comment
}

// Pull request states, the same words for every provider (PullRequest.State).
const (
	PullRequestOpen   = "open"
	PullRequestClosed = "closed"
	PullRequestMerged = "merged"
)

// Check states, the same words for every provider.
const (
	CheckSuccess = "success"
	CheckFailure = "failure"
	CheckPending = "pending"
)

// Check is one CI result on a pull request's head commit.
type Check struct {
	Name  string
	State string // CheckSuccess, CheckFailure or CheckPending
	URL   string
}

// Review states, the same words for every provider.
const (
	ReviewApproved         = "approved"
	ReviewChangesRequested = "changes_requested"
	ReviewCommented        = "commented"
)

// Review is a reviewer's verdict.
type Review struct {
	Author string
	State  string // ReviewApproved, ReviewChangesRequested or ReviewCommented
	Body   string
}

// NewPullRequest is a pull request to open.
type NewPullRequest struct {
	Title string
	Body  string
	Head  string
	Base  string
	Draft bool
}

// PullRequestStatus is one of the user's open pull requests and what needs their attention.
type PullRequestStatus struct {
	Repository         string
	Number             int
	Title              string
	Conflicts          bool
	FailingChecks      bool
	UnresolvedComments bool
}
