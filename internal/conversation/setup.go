package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/tool"
)

// setupCommand runs the repository's setup script in the clone, as OpenHands runs it.
const setupCommand = "chmod +x .openhands/setup.sh && . ./.openhands/setup.sh"

// maxSetupOutput bounds the setup script's output kept in its event (its start and end),
// as the terminal bounds an observation.
const maxSetupOutput = 30_000

// runSetupScript runs .openhands/setup.sh within its time bound and records it in the
// conversation's log as a terminal command of the environment (an ActionEvent and its
// ObservationEvent, source "environment"), so that the user sees its output and the agent
// knows what ran before it started. Its exit status does not stop the start, as in OpenHands.
func (s *Service) runSetupScript(ctx context.Context, c Conversation, w *workspaceRepo) error {
	// The script's events have ids of their own conversation's, so that a start a restart
	// cut short records them once: a script that finished is not run again, and one that was
	// interrupted runs again under the action already recorded.
	actID, obsID := id.Named(c.ID+"/setup-script/action"), id.Named(c.ID+"/setup-script/observation")
	seen, err := s.o.Events.GetEvents(ctx, c.OwnerID, []string{actID, obsID})
	if err != nil {
		return fmt.Errorf("look for the setup script's events: %w", err)
	}
	if seen[1] != nil {
		return nil
	}
	callID := "call_setup_" + strings.ReplaceAll(actID, "-", "")[:16]
	actEv := seen[0]
	if actEv == nil {
		args, _ := json.Marshal(map[string]string{"command": setupCommand})
		action, _ := json.Marshal(map[string]string{"kind": "TerminalAction", "command": setupCommand})
		summary := "run the repository's setup script"
		ev, err := event.New(actID, s.o.Now(), event.SourceEnvironment, &event.ActionEvent{
			Thought: []event.TextPart{}, Action: action, ToolName: tool.Terminal, ToolCallID: callID,
			ToolCall:     event.ToolCall{ID: callID, Name: tool.Terminal, Arguments: string(args), Origin: "completion"},
			SecurityRisk: "UNKNOWN", Summary: &summary,
		})
		if err != nil {
			return err
		}
		ev.ConversationID = c.ID
		if err := s.record(ctx, c, []event.Event{ev}); err != nil {
			return fmt.Errorf("record the setup script: %w", err)
		}
		actEv = &ev
	}

	timeout := s.o.Repository.SetupTimeout
	if timeout <= 0 {
		timeout = defaultRepositoryTimeout
	}
	res, err := w.run(ctx, setupCommand, timeout)
	if err != nil {
		return fmt.Errorf("setup script: %w", err)
	}
	out := clipMiddle(res.Output, maxSetupOutput)
	note := fmt.Sprintf("\n[Command finished with exit code %d]", res.ExitCode)
	if res.TimedOut {
		note = fmt.Sprintf("\n[The setup script was stopped after %v.]", timeout)
	}
	text := strings.TrimLeft(strings.TrimRight(out, "\n")+note, "\n")
	obs := tool.TerminalObservation{
		Kind: tool.KindTerminal, Command: setupCommand, ExitCode: res.ExitCode, Timeout: res.TimedOut,
		Metadata: tool.TerminalMetadata{ExitCode: res.ExitCode, PID: -1, WorkingDir: w.dir, Suffix: note},
		Content:  tool.Content(out), IsError: res.ExitCode != 0,
	}
	if res.ExitCode != 0 {
		s.log.Info("setup script failed; the conversation starts anyway", "conversation_id", c.ID, "exit_code", res.ExitCode, "timed_out", res.TimedOut)
	}
	obsJSON, _ := json.Marshal(obs)
	obsEv, err := event.New(obsID, s.o.Now(), event.SourceEnvironment, &event.ObservationEvent{
		Observation: obsJSON, ActionID: actEv.ID, ToolName: tool.Terminal, ToolCallID: callID,
	})
	if err != nil {
		return err
	}
	obsEv.ConversationID, obsEv.LLMText = c.ID, text
	if err := s.record(ctx, c, []event.Event{obsEv}); err != nil {
		return fmt.Errorf("record the setup script's output: %w", err)
	}
	return nil
}

// clipMiddle keeps the start and the end of s, at most limit bytes in all.
func clipMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	half := limit / 2
	return strings.ToValidUTF8(s[:half], "") + fmt.Sprintf("\n[... %d bytes of output not shown ...]\n", len(s)-2*half) +
		strings.ToValidUTF8(s[len(s)-half:], "")
}

// preCommitHook is the pre-commit hook installed where the repository has
// .openhands/pre-commit.sh, as OpenHands installs it; unlike OpenHands', it also runs a hook
// that was there before (kept as pre-commit.local).
const preCommitHook = `#!/bin/sh
# This hook was installed by agentd: it runs the repository's .openhands/pre-commit.sh.
hooks=$(git rev-parse --git-path hooks) || exit 1
if [ -x "$hooks/pre-commit.local" ]; then
	"$hooks/pre-commit.local" "$@" || exit $?
fi
script="$(git rev-parse --show-toplevel)/.openhands/pre-commit.sh"
if [ -x "$script" ]; then
	"$script" "$@"
	exit $?
fi
echo "agentd pre-commit hook: .openhands/pre-commit.sh is missing or not executable; committing without it" >&2
exit 0
`

// installPreCommitHook installs preCommitHook, moving a pre-commit hook of the repository's
// own aside to pre-commit.local.
func (w *workspaceRepo) installPreCommitHook(ctx context.Context) error {
	cmd := `chmod +x .openhands/pre-commit.sh && hooks=$(git rev-parse --git-path hooks) && mkdir -p "$hooks" && ` +
		`if [ -f "$hooks/pre-commit" ] && ! grep -q 'installed by agentd' "$hooks/pre-commit"; then mv "$hooks/pre-commit" "$hooks/pre-commit.local"; fi && ` +
		`cat > "$hooks/pre-commit" <<'AGENTD_HOOK' && chmod +x "$hooks/pre-commit"` + "\n" + preCommitHook + "AGENTD_HOOK\n"
	res, err := w.run(ctx, cmd, time.Minute)
	if err != nil {
		return fmt.Errorf("install the pre-commit hook: %w", err)
	}
	if res.ExitCode != 0 {
		return &RepositoryError{Msg: "installing the pre-commit hook of " + w.repo + " failed: " + lastLines(res.Output, 3)}
	}
	return nil
}
