package runtimeclient

import (
	"encoding/json"
	"time"
)

// Routes of the agent server's bash API, which runs commands out of band of any
// conversation (OpenHands' RemoteWorkspace uses them).
const (
	RouteBashStart   = "/api/bash/start_bash_command"
	RouteBashExecute = "/api/bash/execute_bash_command"
	RouteBashSearch  = "/api/bash/bash_events/search"
	// RouteBashEvents is followed by an event's id.
	RouteBashEvents = "/api/bash/bash_events/"
)

// Kinds of bash event.
const (
	KindBashCommand = "BashCommand"
	KindBashOutput  = "BashOutput"
)

// BashRequest is the body of start_bash_command and execute_bash_command. Fields it does
// not know are ignored, as OpenHands' agent server does.
type BashRequest struct {
	Command string `json:"command" wire:"required,minlen=1"`
	// Cwd is absolute (inside the workspace) or relative to the workspace; null means the
	// workspace.
	Cwd *string `json:"cwd" wire:"nullable"`
	// Timeout bounds the run in seconds; the command's process group is killed past it.
	Timeout int `json:"timeout" wire:"min=1,max=3600,default=300"`
}

// BashEvent is a BashCommand (a command as it was started) or a BashOutput (what it
// printed and, once it has ended, its exit code). Each kind is sent with its own fields only.
type BashEvent struct {
	Kind      string    `json:"kind" doc:"BashCommand or BashOutput."`
	ID        string    `json:"id"`
	Timestamp time.Time `json:"timestamp"`

	// BashCommand.
	Command string  `json:"command,omitempty"`
	Cwd     *string `json:"cwd,omitempty"`
	Timeout int     `json:"timeout,omitempty"`

	// BashOutput.
	CommandID string  `json:"command_id,omitempty"`
	Order     int     `json:"order,omitempty"`
	ExitCode  *int    `json:"exit_code,omitempty" doc:"null while the command runs; -1 when it was killed at its timeout."`
	Stdout    *string `json:"stdout,omitempty"`
	Stderr    *string `json:"stderr,omitempty"`
}

// MarshalJSON sends the fields of the event's kind, nulls included, as OpenHands does.
func (e BashEvent) MarshalJSON() ([]byte, error) {
	if e.Kind == KindBashCommand {
		return json.Marshal(struct {
			Kind      string    `json:"kind"`
			ID        string    `json:"id"`
			Timestamp time.Time `json:"timestamp"`
			Command   string    `json:"command"`
			Cwd       *string   `json:"cwd"`
			Timeout   int       `json:"timeout"`
		}{e.Kind, e.ID, e.Timestamp, e.Command, e.Cwd, e.Timeout})
	}
	return json.Marshal(struct {
		Kind      string    `json:"kind"`
		ID        string    `json:"id"`
		Timestamp time.Time `json:"timestamp"`
		CommandID string    `json:"command_id"`
		Order     int       `json:"order"`
		ExitCode  *int      `json:"exit_code"`
		Stdout    *string   `json:"stdout"`
		Stderr    *string   `json:"stderr"`
	}{e.Kind, e.ID, e.Timestamp, e.CommandID, e.Order, e.ExitCode, e.Stdout, e.Stderr})
}

// BashEventPage is one page of bash events.
type BashEventPage struct {
	Items      []BashEvent `json:"items"`
	NextPageID *string     `json:"next_page_id"`
}

// BashSortOrder orders a search of bash events.
type BashSortOrder string

// EnumValues lists the accepted values.
func (BashSortOrder) EnumValues() []string { return []string{"TIMESTAMP", "TIMESTAMP_DESC"} }

// BashKind is a kind of bash event, as a filter.
type BashKind string

// EnumValues lists the accepted values.
func (BashKind) EnumValues() []string { return []string{KindBashCommand, KindBashOutput} }

// BashSearchQuery filters and pages GET /api/bash/bash_events/search.
type BashSearchQuery struct {
	KindEq       *BashKind      `query:"kind__eq"`
	CommandIDEq  string         `query:"command_id__eq"`
	TimestampGTE *time.Time     `query:"timestamp__gte"`
	TimestampLT  *time.Time     `query:"timestamp__lt"`
	OrderGT      *int           `query:"order__gt" doc:"Only BashOutput events whose order is greater."`
	SortOrder    *BashSortOrder `query:"sort_order" doc:"Default TIMESTAMP (oldest first)."`
	PageID       string         `query:"page_id" doc:"next_page_id of the previous page."`
	Limit        int            `query:"limit" wire:"min=1,max=100,default=100"`
}
