package conversation

import (
	"errors"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		task    TaskStatus
		sandbox sandbox.Status
		want    Status
	}{
		{TaskWorking, sandbox.StatusMissing, StatusStarting},
		{TaskWaitingForSandbox, sandbox.StatusStarting, StatusStarting},
		{TaskWaitingForSandbox, sandbox.StatusRunning, StatusStarting}, // not READY yet
		{TaskError, sandbox.StatusRunning, StatusError},
		{TaskReady, sandbox.StatusRunning, StatusRunning},
		{TaskReady, sandbox.StatusPaused, StatusStopped},
		{TaskReady, sandbox.StatusStarting, StatusStarting}, // resuming
		{TaskReady, sandbox.StatusError, StatusError},
		{TaskReady, sandbox.StatusMissing, StatusStopped},
		{"", sandbox.StatusRunning, StatusRunning}, // no start task at all
		{"", sandbox.StatusMissing, StatusStopped},
	} {
		got := StatusOf(View{TaskStatus: tc.task, SandboxStatus: tc.sandbox})
		if got != tc.want {
			t.Errorf("task %q, sandbox %q: %q, want %q", tc.task, tc.sandbox, got, tc.want)
		}
	}
}

func TestTaskDetailHidesInternalText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("open /var/lib/agentd/x: permission denied"), "the conversation could not start; the server log has the cause"},
		{&sandbox.NotRunningError{Status: sandbox.StatusError, Detail: "the sandbox's runtime did not answer within 30s"}, "sandbox is ERROR: the sandbox's runtime did not answer within 30s"},
		{sandbox.ErrLimit, "too many running sandboxes: pause or delete one first"},
	} {
		if got := taskDetail(tc.err); got != tc.want {
			t.Errorf("taskDetail(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
