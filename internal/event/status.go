package event

import "time"

// A conversation's status outside its agent is recorded in its log as state updates too, so
// that a stream tells a page everything and it never needs to poll: where its start task is,
// its sandbox's status, and the conversation status both imply. They are
// ConversationStateUpdateEvents with keys of agentd's own: OpenHands' clients keep state keys
// they do not know without acting on them, and the agent loop, which reads only the keys it
// knows, and never shows state updates to the model, is not affected.
const (
	// StateStartTask: the value is a StartTaskState.
	StateStartTask = "start_task"
	// StateSandboxStatus: the value is the sandbox's status ("RUNNING", "PAUSED", ...).
	StateSandboxStatus = "sandbox_status"
	// StateConversationStatus: the value is the conversation's status ("STARTING",
	// "RUNNING", "STOPPED", "ERROR"), as the conversation lists show it.
	StateConversationStatus = "conversation_status"
	// StateWaitingForNode: the value is the node the conversation's sandbox lives on, which
	// has no live replica to run the conversation: it goes on when one starts there; null
	// once it does.
	StateWaitingForNode = "waiting_for_node"
)

// StartTaskState is the value of a start_task update: the start task as
// GET /api/v1/app-conversations/start-tasks shows it, without the request it echoes and the
// agent server's URL.
type StartTaskState struct {
	ID     string  `json:"id"`
	Status string  `json:"status"`
	Detail *string `json:"detail"`
	// AppConversationID is set once the task is READY, as in OpenHands.
	AppConversationID *string   `json:"app_conversation_id"`
	SandboxID         *string   `json:"sandbox_id"`
	UpdatedAt         time.Time `json:"updated_at"`
}
