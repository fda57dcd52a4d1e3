package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/apiclient"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	status := func(s int) error {
		return fmt.Errorf("call: %w", &apiclient.Error{Method: "GET", Path: "/x", Status: s})
	}
	finishedErr, _ := outcomeOf("finished")
	errorErr, _ := outcomeOf("error")
	stuckErr, _ := outcomeOf("stuck")
	waitingErr, _ := outcomeOf("waiting_for_confirmation")
	pausedErr, _ := outcomeOf("paused")
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"usage", Usagef("wrong"), ExitUsage},
		{"no key", errNoKey, ExitAuth},
		{"401", status(401), ExitAuth},
		{"403", status(403), ExitAuth},
		{"404", status(404), ExitNotFound},
		{"410", status(410), ExitNotFound},
		{"409", status(409), ExitUsage},
		{"422", status(422), ExitUsage},
		{"500", status(500), ExitError},
		{"502", status(502), ExitError},
		{"network", errors.New("dial tcp: connection refused"), ExitError},
		{"interrupted", fmt.Errorf("follow: %w", context.Canceled), ExitInterrupted},
		{"finished", finishedErr, ExitOK},
		{"error", errorErr, ExitAgentError},
		{"stuck", stuckErr, ExitAgentError},
		{"waiting", waitingErr, ExitAgentWaiting},
		{"paused", pausedErr, ExitAgentWaiting},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tt.name, tt.err, got, tt.want)
		}
	}
	if _, ends := outcomeOf("running"); ends {
		t.Error("running ends a follow")
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	events := []string{
		`{"kind":"MessageEvent","source":"user","llm_message":{"content":[{"type":"text","text":"Fix it\nplease"}]}}`,
		`{"kind":"SystemPromptEvent","source":"agent","system_prompt":{"type":"text","text":"You are…"}}`,
		`{"kind":"ActionEvent","source":"agent","tool_name":"terminal","thought":[{"type":"text","text":"Run the tests."}],"action":{"kind":"TerminalAction","command":"go test ./..."}}`,
		`{"kind":"ObservationEvent","source":"environment","tool_name":"terminal","observation":{"kind":"TerminalObservation","exit_code":1,"content":[{"type":"text","text":"FAIL x\n"}]}}`,
		`{"kind":"ActionEvent","source":"agent","tool_name":"file_editor","action":{"kind":"FileEditorAction","command":"str_replace","path":"/w/a.go"}}`,
		`{"kind":"ObservationEvent","source":"environment","tool_name":"file_editor","observation":{"kind":"FileEditorObservation","command":"str_replace","path":"/w/a.go","old_content":"a\nb\nc\n","new_content":"a\nB\nc\n","content":[{"type":"text","text":"edited"}]}}`,
		`{"kind":"ActionEvent","source":"agent","tool_name":"finish","action":{"kind":"FinishAction","message":"Fixed."}}`,
		`{"kind":"ConversationStateUpdateEvent","source":"environment","key":"execution_status","value":"finished"}`,
		`{"kind":"ConversationStateUpdateEvent","source":"environment","key":"stats","value":{}}`,
		`{"kind":"ConversationErrorEvent","source":"environment","code":"MaxIterationsReached","detail":"50 steps"}`,
		`{"kind":"SomethingNew","source":"environment"}`,
	}
	var b bytes.Buffer
	r := &renderer{w: &b}
	for _, e := range events {
		r.render([]byte(e))
	}
	want := `you: Fix it
  please
  Run the tests.
$ go test ./...
  FAIL x
  exit 1
✎ str_replace /w/a.go
  --- a/w/a.go
  +++ b/w/a.go
  @@ -1,3 +1,3 @@
   a
  -b
  +B
   c
✓ finished: Fixed.
— agent finished —
✗ MaxIterationsReached: 50 steps
(SomethingNew)
`
	if got := b.String(); got != want {
		t.Fatalf("rendered:\n%s\nwant:\n%s", got, want)
	}

	// On a terminal the same text is coloured.
	b.Reset()
	r.st = style{on: true}
	r.render([]byte(events[3]))
	if !strings.Contains(b.String(), "\x1b[31mexit 1\x1b[0m") {
		t.Fatalf("no colour on a terminal: %q", b.String())
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprint(i))
	}
	got := clip(lines, 10)
	if len(got) != 11 || got[0] != "0" || got[5] != "… 90 more lines …" || got[10] != "99" {
		t.Fatalf("clip: %q", got)
	}
}
