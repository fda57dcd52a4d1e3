package providertool

import "github.com/agentd/agentd/internal/tool"

// ReadIssueArgs are the arguments of read_issue.
type ReadIssueArgs struct {
	Number     int    `json:"number" wire:"required,min=1" doc:"The issue's number."`
	Repository string `json:"repository,omitempty" doc:"The repository; it must be the conversation's."`
}

// ReadRequestArgs are the arguments of read_pull_request (read_merge_request).
type ReadRequestArgs struct {
	Number     int    `json:"number" wire:"required,min=1" doc:"The number of the request."`
	Repository string `json:"repository,omitempty" doc:"The repository; it must be the conversation's."`
}

// CreateRequestArgs are the arguments of create_pull_request (create_merge_request).
type CreateRequestArgs struct {
	Title      string `json:"title" wire:"required,minlen=1" doc:"A short title saying what the change does."`
	Body       string `json:"body,omitempty" doc:"The description: what changed and why, how it was tested, and the issues it resolves."`
	Head       string `json:"head" wire:"required,minlen=1" doc:"The branch with the changes, already pushed."`
	Base       string `json:"base,omitempty" doc:"The branch to merge into. Defaults to the repository's default branch."`
	Draft      bool   `json:"draft,omitempty" doc:"Open it as a draft."`
	Repository string `json:"repository,omitempty" doc:"The repository; it must be the conversation's."`
}

// The argument structs reject keys they do not know, so that a misspelt argument is reported
// to the model instead of silently ignored.
func (ReadIssueArgs) WireStrict()     {}
func (ReadRequestArgs) WireStrict()   {}
func (CreateRequestArgs) WireStrict() {}

// Kind is the observation kind of every provider tool.
const Kind = "GitProviderObservation"

// Observation answers a provider tool call. Number and URL name the issue or request read or
// opened.
type Observation struct {
	Kind       string             `json:"kind"`
	Provider   string             `json:"provider"`
	Repository string             `json:"repository"`
	Number     int                `json:"number,omitempty"`
	URL        string             `json:"url,omitempty"`
	Content    []tool.TextContent `json:"content"`
	IsError    bool               `json:"is_error"`
}
