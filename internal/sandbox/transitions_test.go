package sandbox

import (
	"errors"
	"testing"
)

func TestTransitions(t *testing.T) {
	all := []Status{StatusStarting, StatusRunning, StatusPaused, StatusError, StatusMissing}
	allowed := map[[2]Status]bool{
		{StatusStarting, StatusRunning}: true,
		{StatusStarting, StatusError}:   true,
		{StatusStarting, StatusMissing}: true,
		{StatusRunning, StatusPaused}:   true,
		{StatusRunning, StatusError}:    true,
		{StatusRunning, StatusMissing}:  true,
		{StatusPaused, StatusRunning}:   true,
		{StatusPaused, StatusError}:     true,
		{StatusPaused, StatusMissing}:   true,
	}
	for _, from := range all {
		for _, to := range all {
			if got, want := CanTransition(from, to), allowed[[2]Status{from, to}]; got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestStateError(t *testing.T) {
	err := needStatus(Sandbox{ID: "x", Status: StatusStarting}, StatusRunning, "paused")
	if !errors.Is(err, ErrState) {
		t.Fatalf("%v does not match ErrState", err)
	}
	if got, want := err.Error(), "sandbox is STARTING; only a RUNNING sandbox can be paused"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	if needStatus(Sandbox{Status: StatusRunning}, StatusRunning, "paused") != nil {
		t.Fatal("needStatus refused the status it needs")
	}
}
