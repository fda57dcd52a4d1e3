package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// Store persists conversations and start tasks. Safe for concurrent use. ownerID scopes every
// call: another user's rows are ErrNotFound and never counted or listed.
type Store interface {
	// CreateConversation stores a conversation, its start task and its first events in one
	// transaction, under the lease claim gives (none for a zero Claim): so no other replica
	// finds its start task without a lease, and takes it, before its creator could claim it.
	// ErrExists when the id is taken (by anyone).
	CreateConversation(ctx context.Context, c Conversation, task StartTask, first []event.Event, claim Claim) error
	GetConversation(ctx context.Context, ownerID, id string) (View, error)
	// ListConversations pages through the owner's conversations, newest first (created_at, id).
	// Listed views leave RequestSealed empty: GetConversation reads it.
	ListConversations(ctx context.Context, ownerID string, f Filter, q paging.Query) (vs []View, next string, err error)
	// ListConversationVersions is the first half of ListConversations: the page's
	// conversations as versions (Listed), in the same order, and the same next cursor.
	// ConversationsAt is its second half: the owner's conversations named by ls, in their
	// order, each as it was at its version where the store still holds that version, and
	// otherwise as it is now (with its new Rev; left out when deleted since); never another
	// owner's. A caller that holds what it needs of some rows at their versions reads only
	// the others.
	ListConversationVersions(ctx context.Context, ownerID string, f Filter, q paging.Query) (ls []paging.Listed, next string, err error)
	ConversationsAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]View, error)
	CountConversations(ctx context.Context, ownerID string, f Filter) (int, error)
	// SubConversationIDs returns, for each of the parents, the ids of the owner's
	// conversations that name it as parent, oldest first. Parents without any are absent.
	SubConversationIDs(ctx context.Context, ownerID string, parentIDs []string) (map[string][]string, error)
	// UpdateConversation writes SandboxID, Title, Metrics, LLMModel and UpdatedAt. The
	// execution status, metrics and confirmation policy change with RecordEvents.
	UpdateConversation(ctx context.Context, c Conversation) error
	// PatchConversation applies p to the owner's conversation and sets its UpdatedAt to at.
	// ErrNotFound when the owner has no such conversation.
	PatchConversation(ctx context.Context, ownerID, id string, p Patch, at time.Time) error
	// SetConversationSecrets replaces the owner's conversation's secrets (SecretNames and
	// SecretsSealed) from with to and sets its UpdatedAt to at, if they are still from:
	// compare and set, so that of two changes made from the same secrets one is written.
	// ErrSecretsChanged, writing nothing, if they are not; ErrNotFound when the owner has no
	// such conversation.
	SetConversationSecrets(ctx context.Context, ownerID, id string, from, to SecretSet, at time.Time) error
	// SetGeneratedTitle sets the title unless the user named the conversation, and reports
	// whether it did. ErrNotFound when the owner has no such conversation.
	SetGeneratedTitle(ctx context.Context, ownerID, id, title string, at time.Time) (bool, error)
	// AddPendingMessage queues m behind the conversation's other pending messages and returns
	// its place in the queue, 1 for the first. ErrNotFound when the owner has no such
	// conversation; ErrReady when its start task is READY (or it has none): such a message
	// is sent, not queued; ErrTooManyPending when max messages wait already.
	AddPendingMessage(ctx context.Context, ownerID string, m PendingMessage, max int) (int, error)
	// PendingMessages returns the conversation's pending messages in queue order.
	PendingMessages(ctx context.Context, conversationID string) ([]PendingMessage, error)
	// DeliverPendingMessages removes the pending messages ids and appends evs as RecordEvents
	// does, in one transaction.
	DeliverPendingMessages(ctx context.Context, conversationID string, ids []string, evs []event.Event, u StateUpdate) error
	// ConversationsWithPendingMessages returns the conversations of every owner that have
	// pending messages, oldest first.
	ConversationsWithPendingMessages(ctx context.Context) ([]Conversation, error)
	// AddPRNumber appends number to the conversation's PRNumbers, unless it is there already,
	// and sets its UpdatedAt to at, in one transaction. ErrNotFound when the owner has no
	// such conversation.
	AddPRNumber(ctx context.Context, ownerID, id string, number int, at time.Time) error
	// RecordEvents appends evs to the conversation's log, as event.Store's AppendEvents does,
	// and applies u to the conversation in the same transaction. It returns the Seq of the
	// log's last event before evs (0 for none): a caller that had read up to it knows, with
	// no read back, that evs are all that is new. ErrNotFound when the conversation does not
	// exist.
	RecordEvents(ctx context.Context, conversationID string, evs []event.Event, u StateUpdate) (prev int64, err error)
	// ConversationsByExecutionStatus returns the conversations of every owner whose execution
	// status is status, oldest first.
	ConversationsByExecutionStatus(ctx context.Context, status string) ([]Conversation, error)
	// DeleteConversation removes the conversation with its start tasks and events.
	DeleteConversation(ctx context.Context, ownerID, id string) error

	// ClaimConversation takes the conversation's lease for holder (of node) for ttl, as the
	// store's clock counts it, if the lease is free, expired or holder's already, and reports
	// whether holder has it. ErrNotFound when the conversation does not exist.
	ClaimConversation(ctx context.Context, id, holder, node string, ttl time.Duration) (bool, error)
	// RenewLeases extends every lease of holder by ttl from now and returns the ids of the
	// conversations it still holds.
	RenewLeases(ctx context.Context, holder string, ttl time.Duration) ([]string, error)
	// ReleaseConversation frees the conversation's lease if holder has it.
	ReleaseConversation(ctx context.Context, id, holder string) error
	// ReleaseNodeLeases frees the leases held for node by another holder than except (an
	// earlier run of the node's replica), and returns how many.
	ReleaseNodeLeases(ctx context.Context, node, except string) (int, error)
	// ConversationLease returns the conversation's lease; a zero Lease when it has none.
	ConversationLease(ctx context.Context, id string) (Lease, error)
	// UnownedConversations returns up to limit conversations that need a runner and whose
	// lease is free or expired (see Unowned), oldest first.
	UnownedConversations(ctx context.Context, limit int) ([]Unowned, error)
	// AddCommand leaves a command of kind for whoever holds the conversation's lease, now or
	// next (a conversation with commands needs a runner: see UnownedConversations), and
	// returns the holder to wake: another than self whose lease has not expired, or "".
	// ErrNotFound when the conversation does not exist.
	AddCommand(ctx context.Context, id, kind, self string) (holder string, err error)
	// TakeCommands removes and returns, in the order they were left, the commands for the
	// conversations whose lease holder has.
	TakeCommands(ctx context.Context, holder string) ([]Command, error)

	// Heartbeat says that replica r lives for ttl more, as the store's clock counts it, with
	// the keys its keyring holds; LiveReplicas returns the replicas alive now, by id;
	// RemoveReplica forgets a replica that stops (and those that died long ago).
	Heartbeat(ctx context.Context, r Replica, ttl time.Duration) error
	LiveReplicas(ctx context.Context) ([]Replica, error)
	RemoveReplica(ctx context.Context, replica string) error

	// SecretsRevision returns the revision of the user's secrets (0 before their first
	// change); BumpSecretsRevision adds one, after every change of them, so that every
	// replica knows to mask the new values.
	SecretsRevision(ctx context.Context, userID string) (int64, error)
	BumpSecretsRevision(ctx context.Context, userID string) error

	GetStartTask(ctx context.Context, ownerID, id string) (StartTask, error)
	ListStartTasks(ctx context.Context, ownerID string, f TaskFilter, sort TaskSort, q paging.Query) (ts []StartTask, next string, err error)
	// ListStartTaskVersions and StartTasksAt are ListStartTasks in two halves, as
	// ListConversationVersions and ConversationsAt are ListConversations.
	ListStartTaskVersions(ctx context.Context, ownerID string, f TaskFilter, sort TaskSort, q paging.Query) (ls []paging.Listed, next string, err error)
	StartTasksAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]StartTask, error)
	CountStartTasks(ctx context.Context, ownerID string, f TaskFilter) (int, error)
	// UpdateStartTask writes Status, Detail, SandboxID, AgentServerURL and UpdatedAt.
	UpdateStartTask(ctx context.Context, t StartTask) error
	// PendingStartTasks returns every unfinished task of every owner, to resume after a restart.
	PendingStartTasks(ctx context.Context) ([]StartTask, error)
}

// StateUpdate is what RecordEvents changes on the conversation; zero fields stay as they are.
type StateUpdate struct {
	ExecutionStatus    string
	Metrics            json.RawMessage
	ConfirmationPolicy *confirm.Policy
	// WaitingForNode, when set, sets Conversation.WaitingForNode ("" clears it).
	WaitingForNode *string
	// SandboxID, when not empty, becomes the conversation's sandbox.
	SandboxID string
	UpdatedAt time.Time
	// Holder, when set, makes the append conditional: it fails with ErrLeaseLost, writing
	// nothing, unless Holder has the conversation's lease (expired or not, as long as no
	// other replica took it).
	Holder string
	// IfStatus, when set, makes the append conditional too: it fails with ErrStatusChanged,
	// writing nothing, unless the conversation's execution status is *IfStatus (compare and
	// set: of two replicas answering one pending action, one does).
	IfStatus *string
	// IfSecretsRevision, when set, makes the append conditional on the conversation's owner's
	// secrets (Store.SecretsRevision) too: it fails with ErrSecretsRevised, writing nothing,
	// unless their revision is still *IfSecretsRevision, the one the events were masked for.
	// The check costs no round trip of its own: it is read with the conversation's lock.
	IfSecretsRevision *int64
	// Task, when set, is stored with the events, in the same transaction, as UpdateStartTask
	// stores it: a start task's step and the events that record it are written together or
	// not at all. It must be a task of the conversation: when it is not, the append fails
	// with ErrNotFound, writing nothing.
	Task *StartTask
}

// SecretSet is what a conversation keeps of its secrets: their names (Conversation.SecretNames)
// and the inline values, sealed (Conversation.SecretsSealed).
type SecretSet struct {
	Names  []string
	Sealed []byte
}

// ErrSecretsChanged: the conversation's secrets are no longer those a change was made from
// (Store.SetConversationSecrets).
var ErrSecretsChanged = errors.New("the conversation's secrets changed meanwhile")

// ErrSecretsRevised: the conversation's owner's secrets changed since the events of an append
// were masked (StateUpdate.IfSecretsRevision).
var ErrSecretsRevised = errors.New("the owner's secrets changed since the events were masked")

// ErrStatusChanged: the conversation's execution status is no longer the one an append was
// made for (StateUpdate.IfStatus).
var ErrStatusChanged = errors.New("the conversation's status changed meanwhile")
