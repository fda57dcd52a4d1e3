package agent

import "fmt"

// Status is the agent's execution status (OpenHands' ConversationExecutionStatus).
type Status string

// Execution statuses. The empty status is a conversation whose agent never ran.
const (
	StatusIdle                   Status = "idle"
	StatusRunning                Status = "running"
	StatusPaused                 Status = "paused"
	StatusWaitingForConfirmation Status = "waiting_for_confirmation"
	StatusFinished               Status = "finished"
	StatusError                  Status = "error"
	StatusStuck                  Status = "stuck"
)

// transitions lists, for each status, the statuses it may change to and what causes each
// change. It is the one table of execution status changes; CanTransition reads it and a test
// walks it.
var transitions = map[Status]map[Status]string{
	"": {
		StatusIdle:    "the conversation is ready without a message to answer",
		StatusRunning: "the conversation starts with a message",
		StatusPaused:  "the user pauses before the agent ran",
	},
	StatusIdle: {
		StatusRunning: "run, or a user message with run",
		StatusPaused:  "pause",
	},
	StatusRunning: {
		StatusPaused:                 "pause, which interrupts the step in flight",
		StatusFinished:               "the agent called finish or answered without a tool call",
		StatusError:                  "an unrecoverable error, or the iteration limit",
		StatusStuck:                  "the stuck detector fired",
		StatusWaitingForConfirmation: "an action needs the user's confirmation",
	},
	StatusPaused: {
		StatusRunning: "run, or a user message with run",
		StatusIdle:    "a user message without run",
	},
	StatusWaitingForConfirmation: {
		StatusRunning: "the user confirmed (or run), or a message reached the loop as it stopped to wait and rejected the actions",
		StatusIdle:    "the user rejected the actions, with a reason or a message",
		StatusPaused:  "pause, which rejects the actions",
	},
	StatusFinished: {
		StatusRunning: "a new user message with run",
		StatusIdle:    "a new user message without run",
	},
	StatusError: {
		StatusRunning: "run, or a user message with run",
		StatusIdle:    "a user message without run",
	},
	StatusStuck: {
		StatusRunning: "run, or a user message with run",
		StatusIdle:    "a user message without run",
	},
}

// CanTransition reports whether the execution status may change from from to to. Staying
// in the same status is always allowed.
func CanTransition(from, to Status) bool {
	if from == to {
		return true
	}
	_, ok := transitions[from][to]
	return ok
}

// TransitionError says why a status change is refused.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	from := e.From
	if from == "" {
		from = "not started"
	}
	return fmt.Sprintf("the agent is %s and cannot become %s", from, e.To)
}

// Terminal reports whether the status ends a run: the agent will not act again until the
// user sends a message or asks it to run.
func (s Status) Terminal() bool {
	return s == StatusFinished || s == StatusError || s == StatusStuck
}
