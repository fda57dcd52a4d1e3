package apitypes

// ConversationFileQuery is the query of GET /api/v1/app-conversations/{id}/file.
type ConversationFileQuery struct {
	FilePath string `query:"file_path" wire:"default=PLAN.md" doc:"The file: absolute (inside the workspace) or relative to the workspace."`
}

// ConversationFilesQuery is the query of GET /api/v1/app-conversations/{id}/files.
type ConversationFilesQuery struct {
	Path string `query:"path" doc:"Directory whose files to list; empty means the workspace."`
}
