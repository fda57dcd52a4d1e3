package runtimeclient

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/internal/tool"
)

// KeyEnv names the environment variable that hands the session key to `agentd runtime`. The
// runtime removes it from its environment before serving, so commands never see it.
const KeyEnv = "AGENTD_RUNTIME_KEY"

// HeaderSessionKey carries the session key on every request to the runtime.
const HeaderSessionKey = "X-Session-API-Key"

// Command limits.
const (
	DefaultCommandTimeoutSeconds = 120
	MaxCommandTimeoutSeconds     = 3600
	// MaxOutputBytes caps the output kept of one command; the rest is read and dropped.
	MaxOutputBytes = 1 << 20
)

// CommandRequest is the body of POST /api/command.
type CommandRequest struct {
	// Command is run with `bash -c` (or `/bin/sh -c` where there is no bash).
	Command string `json:"command" wire:"required,minlen=1"`
	// Cwd is the working directory: empty means the workspace, a relative path is taken under
	// the workspace, an absolute path is used as it is.
	Cwd string `json:"cwd,omitempty"`
	// TimeoutSeconds bounds the run; 0 means DefaultCommandTimeoutSeconds.
	TimeoutSeconds int `json:"timeout_seconds,omitempty" wire:"min=1,max=3600,default=120"`
	// Env is added to the runtime's environment for this command.
	Env map[string]string `json:"env,omitempty"`
}

// CommandResult is the answer to POST /api/command.
type CommandResult struct {
	// ExitCode is the command's exit status; 128+n when signal n ended it; -1 on timeout.
	ExitCode int `json:"exit_code"`
	// Output is stdout and stderr interleaved in the order they were written.
	Output string `json:"output"`
	// TimedOut is set when the command was killed because it ran past its timeout.
	TimedOut bool `json:"timed_out"`
	// Truncated is set when the output went past MaxOutputBytes and only its start was kept.
	Truncated bool `json:"truncated"`
}

// Identity is the answer to GET /api/identity.
type Identity struct {
	SandboxID string    `json:"sandbox_id"`
	Workspace string    `json:"workspace"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
}

// ToolRequest is the body of POST /api/tools/{name}.
type ToolRequest struct {
	// ConversationID selects the conversation's tool session: its terminal and its edit
	// history. Calls for one conversation run one at a time; conversations run in parallel.
	ConversationID string `json:"conversation_id" wire:"required,minlen=1,maxlen=256"`
	// Arguments are the model's arguments, passed on unchanged. Arguments that do not fit the
	// tool are not an HTTP error: the answer is a result with is_error set, for the model.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Terminal bounds how long a terminal call waits for its command. The control plane
	// sends its configured values with every call, so that they hold in sandboxes started
	// before a change; absent, or a zero field, means the runtime's own.
	Terminal *TerminalWaits `json:"terminal,omitempty"`
	// Env are the variables the terminal's commands get on top of the sandbox's environment:
	// the secrets the conversation's agent may use. The control plane sends them with every
	// terminal call, and each call's replace those of the one before, so that a changed value
	// holds from the next command; a variable left out is unset. They reach the shell through
	// its terminal, never through a file. Other tools ignore them.
	Env map[string]string `json:"env,omitempty"`
	// WorkingDir is where the conversation works, an absolute path within the workspace: its
	// terminal starts there, and the editor and the searches take relative paths from there.
	// It counts when the conversation's session starts; absent, the workspace itself.
	WorkingDir string `json:"working_dir,omitempty" wire:"maxlen=4096"`
}

// TerminalWaits bound how long one terminal call waits for its command (see
// terminal.Waits). Seconds, as the terminal tool's own timeout argument.
type TerminalWaits struct {
	// NoChangeTimeoutSeconds ends the call once the command has printed nothing new for
	// that long.
	NoChangeTimeoutSeconds float64 `json:"no_change_timeout_seconds,omitempty" wire:"min=0,max=86400"`
	// MaxWaitSeconds ends the call after that long, however much the command prints and
	// whatever timeout the model asked for.
	MaxWaitSeconds float64 `json:"max_wait_seconds,omitempty" wire:"min=0,max=86400"`
}

// NewTerminalWaits converts durations; zero stays zero.
func NewTerminalWaits(noChange, maxWait time.Duration) *TerminalWaits {
	return &TerminalWaits{NoChangeTimeoutSeconds: noChange.Seconds(), MaxWaitSeconds: maxWait.Seconds()}
}

// InterruptResult is the answer to POST /api/tools/sessions/{conversation_id}/interrupt.
type InterruptResult struct {
	// Interrupted says the conversation's terminal had a command whose call nobody waited
	// for: it was stopped (or had ended by itself), and Result reports it as a terminal call
	// would.
	Interrupted bool         `json:"interrupted"`
	Result      *tool.Result `json:"result,omitempty"`
}

// CloseToolSessionResult is the answer to DELETE /api/tools/sessions/{conversation_id}.
type CloseToolSessionResult struct {
	// Closed is false when the conversation had no session.
	Closed bool `json:"closed"`
}

// PathDeliver is where a pooled runtime takes its one delivery (DeliverRequest).
const PathDeliver = "/api/deliver"

// DeliverRequest is the body of POST /api/deliver: what a runtime started ahead of need
// (`agentd runtime --pooled`) is given once a start claims its sandbox. The request carries
// the pool's secret where other requests carry the session key; from the answer on, the
// runtime serves as one started with SessionKey and Env.
type DeliverRequest struct {
	// SessionKey is the key every later request must carry.
	SessionKey string `json:"session_key"`
	// Env is laid over the runtime's own environment for every command it runs.
	Env map[string]string `json:"env,omitempty"`
}
