package apitypes

import "time"

// RepositoryListQuery is the query of GET /api/user/repositories.
type RepositoryListQuery struct {
	Sort             string        `query:"sort" doc:"Accepted for OpenHands' clients; repositories come most recently pushed first."`
	SelectedProvider *ProviderType `query:"selected_provider" doc:"One provider; without it, the page of each of the caller's providers."`
	Page             int           `query:"page" wire:"min=1,default=1"`
	PerPage          int           `query:"per_page" wire:"min=1,max=100,default=30"`
	InstallationID   string        `query:"installation_id" doc:"Accepted for OpenHands' clients; tokens see what they see."`
}

// Repository is a repository at a git provider.
type Repository struct {
	ID              string       `json:"id"`
	FullName        string       `json:"full_name"`
	GitProvider     ProviderType `json:"git_provider"`
	IsPublic        bool         `json:"is_public"`
	StargazersCount *int         `json:"stargazers_count"`
	LinkHeader      *string      `json:"link_header" doc:"A Link header with rel=\"next\" for the next page of this provider's repositories, null on the last page."`
	PushedAt        *time.Time   `json:"pushed_at"`
	OwnerType       *string      `json:"owner_type" doc:"user or organization"`
	MainBranch      *string      `json:"main_branch"`
}

// BranchListQuery is the query of GET /api/user/repository/branches.
type BranchListQuery struct {
	Repository       string        `query:"repository" wire:"required" doc:"owner/name (GitLab: group/subgroup/name; Bitbucket Data Center: PROJECT/slug)."`
	Page             int           `query:"page" wire:"min=1,default=1"`
	PerPage          int           `query:"per_page" wire:"min=1,max=100,default=30"`
	SelectedProvider *ProviderType `query:"selected_provider" doc:"The provider to ask; without it, the first of the caller's providers whose token reaches the repository."`
}

// Branch is a branch of a repository.
type Branch struct {
	Name         string     `json:"name"`
	CommitSHA    string     `json:"commit_sha"`
	Protected    bool       `json:"protected"`
	LastPushDate *time.Time `json:"last_push_date"`
}

// PaginatedBranchesResponse is a page of a repository's branches.
type PaginatedBranchesResponse struct {
	Branches    []Branch `json:"branches"`
	HasNextPage bool     `json:"has_next_page"`
	CurrentPage int      `json:"current_page"`
	PerPage     int      `json:"per_page"`
	TotalCount  *int     `json:"total_count" doc:"Null when the provider does not tell it."`
}
