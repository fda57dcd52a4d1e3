package sandbox

import (
	"fmt"
	"slices"
)

// transitions is every status change a sandbox may make. ERROR and MISSING are terminal: such
// a sandbox can only be deleted.
var transitions = map[Status][]Status{
	StatusStarting: {StatusRunning, StatusError, StatusMissing},
	StatusRunning:  {StatusPaused, StatusError, StatusMissing},
	StatusPaused:   {StatusRunning, StatusError, StatusMissing},
}

// CanTransition reports whether a sandbox may go from status from to status to.
func CanTransition(from, to Status) bool {
	return slices.Contains(transitions[from], to)
}

// StateError says why the status of a sandbox does not allow an operation. It matches
// ErrState with errors.Is, and its text is safe to show to the sandbox's owner.
type StateError struct {
	ID     string
	Status Status
	// Op is what was asked: "paused", "resumed", "reached".
	Op string
	// Need is the status the operation needs.
	Need Status
}

func (e *StateError) Error() string {
	return fmt.Sprintf("sandbox is %s; only a %s sandbox can be %s", e.Status, e.Need, e.Op)
}

// ClientMessage is the text to show the sandbox's owner (the HTTP layer's 409 detail).
func (e *StateError) ClientMessage() string { return e.Error() }

// Is makes errors.Is(err, ErrState) hold.
func (e *StateError) Is(target error) bool { return target == ErrState }

// needStatus returns a *StateError unless sb is in status need.
func needStatus(sb Sandbox, need Status, op string) error {
	if sb.Status == need {
		return nil
	}
	return &StateError{ID: sb.ID, Status: sb.Status, Op: op, Need: need}
}

// NotRunningError says a sandbox waited on ended in ERROR or MISSING instead of running. It
// matches ErrState, and its text (with the sandbox's client-facing detail) is safe to show.
type NotRunningError struct {
	ID     string
	Status Status
	Detail string
}

func (e *NotRunningError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("sandbox is %s", e.Status)
	}
	return fmt.Sprintf("sandbox is %s: %s", e.Status, e.Detail)
}

// ClientMessage is the text to show the sandbox's owner.
func (e *NotRunningError) ClientMessage() string { return e.Error() }

// Is makes errors.Is(err, ErrState) hold.
func (e *NotRunningError) Is(target error) bool { return target == ErrState }
