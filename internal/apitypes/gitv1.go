package apitypes

// The current generation's git browsing: OpenHands' /api/v1/git/*/search routes. A page_id
// is opaque: pass back the next_page_id of the page before.

// RepositorySearchQuery is the query of GET /api/v1/git/repositories/search.
type RepositorySearchQuery struct {
	Provider       ProviderType `query:"provider" wire:"required"`
	Query          string       `query:"query" doc:"Only repositories whose full name contains it (case-insensitive), from the caller's own; OpenHands searches the whole provider."`
	InstallationID string       `query:"installation_id" doc:"Accepted for OpenHands' clients; tokens see what they see."`
	PageID         string       `query:"page_id"`
	Limit          int          `query:"limit" wire:"min=1,max=100,default=100"`
	SortOrder      string       `query:"sort_order" doc:"Accepted with a query; repositories come most recently pushed first. Without a query it is a 400, as OpenHands."`
}

// RepositorySearchPage is a page of repositories.
type RepositorySearchPage struct {
	Items      []Repository `json:"items"`
	NextPageID *string      `json:"next_page_id"`
}

// BranchSearchQuery is the query of GET /api/v1/git/branches/search.
type BranchSearchQuery struct {
	Provider   ProviderType `query:"provider" wire:"required"`
	Repository string       `query:"repository" wire:"required" doc:"owner/name (GitLab: group/subgroup/name; Bitbucket Data Center: PROJECT/slug)."`
	Query      string       `query:"query" doc:"Only branches whose name contains it (case-insensitive); empty for all."`
	PageID     string       `query:"page_id"`
	Limit      int          `query:"limit" wire:"min=1,max=100,default=30"`
}

// BranchSearchPage is a page of a repository's branches.
type BranchSearchPage struct {
	Items      []Branch `json:"items"`
	NextPageID *string  `json:"next_page_id"`
}

// SuggestedTaskSearchQuery is the query of GET /api/v1/git/suggested-tasks/search.
type SuggestedTaskSearchQuery struct {
	PageID string `query:"page_id"`
	Limit  int    `query:"limit" wire:"min=1,max=100,default=30"`
}

// SuggestedTaskPage is a page of suggested tasks.
type SuggestedTaskPage struct {
	Items      []SuggestedTask `json:"items"`
	NextPageID *string         `json:"next_page_id"`
}

// GitInfoQuery is the query of GET /api/v1/users/git-info.
type GitInfoQuery struct {
	Provider *ProviderType `query:"provider" doc:"The provider to ask; without it, the first of the caller's (github, gitlab, bitbucket, enterprise_sso)."`
}

// UserGitInfo is the caller's account at a git provider, as OpenHands' User.
type UserGitInfo struct {
	ID        string  `json:"id"`
	Login     string  `json:"login"`
	AvatarURL string  `json:"avatar_url"`
	Company   *string `json:"company"`
	Name      *string `json:"name"`
	Email     *string `json:"email"`
}

// InstallationSearchQuery is the query of GET /api/v1/git/installations/search.
type InstallationSearchQuery struct {
	Provider ProviderType `query:"provider" wire:"required"`
	PageID   string       `query:"page_id"`
	Limit    int          `query:"limit" wire:"min=1,max=100,default=100"`
}

// InstallationPage is a page of installation ids (GitHub), workspace slugs (Bitbucket
// Cloud) or project keys (Bitbucket Data Center).
type InstallationPage struct {
	Items      []string `json:"items"`
	NextPageID *string  `json:"next_page_id"`
}
