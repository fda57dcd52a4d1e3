// Package settings holds each user's settings: the LLM to use and its key, MCP servers and the
// other preferences OpenHands clients store. The service decodes them once into typed values
// (Settings, MCPConfig); no other package reads them by name. Secret values are sealed and
// never returned.
package settings

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound: the user has stored no settings yet.
var ErrNotFound = errors.New("settings not found")

// Record is what the store keeps for one user.
type Record struct {
	UserID string
	// Values holds the non-secret settings as one JSON object keyed by the names of the
	// Settings fields (the API's names). It may hold keys this version does not know: they
	// are ignored when read and kept when written, so that versions of agentd sharing a
	// store do not erase each other's settings.
	Values json.RawMessage
	// Secrets holds sealed secret settings by name (llm_api_key, search_api_key,
	// sandbox_api_key, mcp_config).
	Secrets   map[string][]byte
	UpdatedAt time.Time
}

// Store persists settings. Safe for concurrent use.
type Store interface {
	GetSettings(ctx context.Context, userID string) (Record, error)
	// PutSettings inserts or replaces the user's record.
	PutSettings(ctx context.Context, r Record) error
}
