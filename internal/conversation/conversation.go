// Package conversation holds conversations and their start tasks: the records, the rules that
// derive a conversation's status, and the service that creates, starts, lists and deletes them.
package conversation

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/sandbox"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("conversation not found")
	ErrExists   = errors.New("conversation id already exists")
	// ErrNoLLM: the user has no usable LLM settings.
	ErrNoLLM = errors.New("no usable LLM settings")
)

// Versions of the API a conversation was created through.
const (
	V0 = "V0"
	V1 = "V1"
)

// Conversation is the stored record.
type Conversation struct {
	ID                 string
	OwnerID            string
	SandboxID          string
	Version            string
	Title              string
	SelectedRepository *string
	SelectedBranch     *string
	GitProvider        *string
	Trigger            *string
	PRNumbers          []int
	LLMModel           *string
	// Metrics is a MetricsSnapshot JSON object, or nil.
	Metrics json.RawMessage
	// ExecutionStatus is the agent's state (agent.Status), empty until the start task is
	// READY. It copies the last execution_status update of the event log.
	ExecutionStatus string
	// ConfirmationPolicy says which of the agent's actions wait for the user's confirmation;
	// it copies the last confirmation_policy update of the event log (zero: never).
	ConfirmationPolicy confirm.Policy
	ParentID           *string
	// RequestSealed is the creation request exactly as received, sealed because it may hold
	// secrets (MCP server keys). Nothing a client sent is lost.
	RequestSealed []byte
	// SecretNames are the secrets the conversation's agent may use, by name: its owner's
	// stored custom secrets, and those its start request gave inline.
	SecretNames []string
	// SecretsSealed holds the inline ones: a sealed JSON object of name to value; nil when
	// there are none.
	SecretsSealed []byte
	// Public is whether the conversation is shared, as a client last set it; nil until then.
	Public *bool
	// Tags are the client's metadata of the conversation; never nil once stored.
	Tags map[string]string
	// TitleByUser is set once the user named the conversation: a generated title never
	// replaces theirs.
	TitleByUser bool
	// WorkDir is where the conversation's agent works, relative to its sandbox's workspace:
	// ProjectDir for conversations created since agentd follows OpenHands there, "" for older
	// ones, which work in the workspace itself. See Service.workspaceOf.
	WorkDir string
	// WaitingForNode is the node hosting the conversation's sandbox while that node runs no
	// replica to run it (it goes on when one starts there); "" otherwise. Recorded with the
	// waiting_for_node state updates (event.StateWaitingForNode).
	WaitingForNode string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Patch changes a conversation's metadata; nil fields stay as they are. A Title given here is
// the user's (see Conversation.TitleByUser).
type Patch struct {
	Title              *string
	Public             *bool
	SelectedRepository *string
	SelectedBranch     *string
	GitProvider        *string
}

// View is a conversation with what its status derives from.
type View struct {
	Conversation
	// SandboxStatus is the status of the conversation's sandbox; MISSING when it has none.
	SandboxStatus sandbox.Status
	// TaskStatus is the status of the conversation's start task, if it has one.
	TaskStatus TaskStatus
	// TaskDetail is the start task's detail (why it failed).
	TaskDetail string
	// SandboxKeySealed is the sealed session key of the sandbox, when it has one. Like
	// SecretsSealed and every slice, map and pointer of a listed View, it is never changed in
	// place: the readers of a listing share them with the store's listing cache.
	SandboxKeySealed []byte
	// SubConversationIDs are the conversations that name this one as parent. Get and GetMany
	// fill it; searches leave it empty, as OpenHands does.
	SubConversationIDs []string
	// Rev is the store's version of the row, read with it: the store changes it whenever
	// anything else the view holds changes (but SubConversationIDs), through any replica, so
	// that a listed view's ID, CreatedAt and Rev name all it holds (see
	// internal/store/listingcache). It says nothing of the conversation itself, and is left
	// out of the view's JSON (which only tests write, to compare views).
	Rev int64 `json:"-"`
}

// Filter narrows a conversation search. Zero fields do not filter.
type Filter struct {
	TitleContains      string
	CreatedGTE         *time.Time
	CreatedLT          *time.Time
	UpdatedGTE         *time.Time
	UpdatedLT          *time.Time
	IncludeSub         bool // include conversations that have a parent
	SelectedRepository string
	Trigger            string
	SandboxID          string // conversations that use this sandbox
}
