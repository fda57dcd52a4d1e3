package apitypes

// CustomSecretCreate is the body of POST /api/v1/secrets.
type CustomSecretCreate struct {
	Name        string  `json:"name" wire:"required" doc:"An environment variable name: a letter or underscore, then letters, digits and underscores. Unique per user."`
	Description *string `json:"description"`
	Value       string  `json:"value" wire:"required,secret" doc:"At least 6 bytes, so that it can be masked where it appears. Never returned."`
}

// WireStrict rejects unknown keys.
func (CustomSecretCreate) WireStrict() {}

// CustomSecretUpdate is the body of PUT /api/v1/secrets/{secret_id}. Absent or null fields
// keep their value; at least one must be given.
type CustomSecretUpdate struct {
	Name        *string `json:"name" doc:"A new name: renames the secret."`
	Description *string `json:"description"`
	Value       *string `json:"value" wire:"secret" doc:"A new value; agentd addition (OpenHands changes only name and description)."`
}

// WireStrict rejects unknown keys.
func (CustomSecretUpdate) WireStrict() {}

// CustomSecretWithoutValue is a secret as clients see it: its name and description.
type CustomSecretWithoutValue struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// CustomSecretPage is a page of secrets.
type CustomSecretPage struct {
	Items      []CustomSecretWithoutValue `json:"items"`
	NextPageID *string                    `json:"next_page_id"`
}

// CustomSecretSearchQuery filters GET /api/v1/secrets/search.
type CustomSecretSearchQuery struct {
	NameContains string `query:"name__contains" doc:"Keep the secrets whose name contains this, ignoring case."`
	PageID       string `query:"page_id"`
	Limit        int    `query:"limit" wire:"min=1,max=100,default=100"`
}

// SecretNameItem is one secret a sandbox may read.
type SecretNameItem struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// SecretNamesResponse answers GET /api/v1/sandboxes/{sandbox_id}/settings/secrets.
type SecretNamesResponse struct {
	Secrets []SecretNameItem `json:"secrets"`
}
