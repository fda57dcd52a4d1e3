// Package settings holds each user's settings: the LLM to use and its key, MCP servers and the
// other preferences OpenHands clients store. Secret values are sealed and never returned.
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
	// Values holds the non-secret settings as a JSON object.
	Values json.RawMessage
	// Secrets holds sealed secret settings by name (llm_api_key, search_api_key, ...).
	Secrets   map[string][]byte
	UpdatedAt time.Time
}

// Store persists settings. Safe for concurrent use.
type Store interface {
	GetSettings(ctx context.Context, userID string) (Record, error)
	// PutSettings inserts or replaces the user's record.
	PutSettings(ctx context.Context, r Record) error
}
