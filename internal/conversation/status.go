package conversation

import "github.com/agentd/agentd/internal/sandbox"

// Status is a conversation's status (conversation_status).
type Status string

// Conversation statuses. STARTING, RUNNING and STOPPED are the seed's; ERROR says the start
// failed or the sandbox broke, as OpenHands' V0 API does.
const (
	StatusStarting Status = "STARTING"
	StatusRunning  Status = "RUNNING"
	StatusStopped  Status = "STOPPED"
	StatusError    Status = "ERROR"
)

// sandboxToConversation maps a started conversation's sandbox status to its own status.
var sandboxToConversation = map[sandbox.Status]Status{
	sandbox.StatusStarting: StatusStarting,
	sandbox.StatusRunning:  StatusRunning,
	sandbox.StatusPaused:   StatusStopped,
	sandbox.StatusError:    StatusError,
	sandbox.StatusMissing:  StatusStopped,
}

// StatusOf derives a conversation's status: STARTING while its start task runs, ERROR if the
// start failed, and otherwise what its sandbox's status maps to (a paused or vanished sandbox
// makes the conversation STOPPED; resuming it makes it STARTING, then RUNNING).
func StatusOf(v View) Status {
	switch {
	case v.TaskStatus == TaskError:
		return StatusError
	case v.TaskStatus != "" && !v.TaskStatus.Terminal():
		return StatusStarting
	}
	if s, ok := sandboxToConversation[v.SandboxStatus]; ok {
		return s
	}
	return StatusStopped
}
