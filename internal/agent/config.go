package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/tool"
)

// Defaults of Config.
const (
	DefaultMaxIterations      = 500
	DefaultCondenserMaxEvents = 80
	DefaultCondenserKeepFirst = 4
	DefaultMaxTokens          = 8192
)

// Config is what one conversation's agent is told.
type Config struct {
	// Model is the model name sent with every request; empty leaves it to the client.
	Model string
	// MaxIterations bounds the model calls of one run; 0 means DefaultMaxIterations.
	MaxIterations int
	// DisableStuckDetection turns the stuck detector off.
	DisableStuckDetection bool
	// CondenserMaxEvents is the number of events the model may see before older ones are
	// condensed into a summary; 0 means DefaultCondenserMaxEvents, negative disables
	// condensation by size (a context-window error still condenses).
	CondenserMaxEvents int
	// CondenserKeepFirst is the number of first events a condensation keeps; 0 means
	// DefaultCondenserKeepFirst.
	CondenserKeepFirst int
	// MaxTokens caps each reply; 0 means DefaultMaxTokens.
	MaxTokens int
	// MaxBudget is the conversation's budget in USD (max_budget_per_task): once the
	// accumulated cost of its model calls reaches it, the loop stops before the next call with
	// an error saying so. 0 or less means no budget.
	MaxBudget float64
	// Instructions are the conversation_instructions, added to the system prompt.
	Instructions string
	// Secrets are the secrets the terminal's commands get as environment variables; the
	// system prompt names them.
	Secrets []SecretInfo
	// Workspace is the absolute path of the workspace in the sandbox.
	Workspace string
	// Repository is the repository the conversation works on; its zero value means none.
	Repository Repository
	// Replay is a recorded trajectory to execute without the model (see ParseReplay).
	Replay []ReplayAction
	// Skills are the conversation's skills: the always-on ones are in the system message
	// from the first call, each other one from the first user message holding one of its
	// triggers.
	Skills []skill.Skill
	// Tools are offered beside the built-in ones and run by the Executor: the
	// conversation's git provider tools and its MCP servers' tools.
	Tools []tool.Tool
}

func (c Config) withDefaults() Config {
	if c.MaxIterations <= 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.CondenserMaxEvents == 0 {
		c.CondenserMaxEvents = DefaultCondenserMaxEvents
	}
	if c.CondenserKeepFirst <= 0 {
		c.CondenserKeepFirst = DefaultCondenserKeepFirst
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.Workspace == "" {
		c.Workspace = "/workspace"
	}
	return c
}

// Log is a conversation's event log as the loop uses it.
type Log interface {
	// Load returns the events with Seq greater than afterSeq, in order, whoever appended
	// them: messages the user sends during a run arrive this way.
	Load(ctx context.Context, afterSeq int64) ([]event.Event, error)
	// Append stores evs durably and in order, in one transaction, before anyone sees them.
	// State update events (execution_status, stats) are also applied to the conversation.
	// It sets each event's Seq and leaves evs as stored (secrets masked), and returns the
	// Seq of the log's last event before them (0 for none).
	Append(ctx context.Context, evs []event.Event) (prev int64, err error)
}

// Executor runs the tools that live in the sandbox, and those of Config.Tools. Run blocks until the tool answers,
// however long the sandbox stays paused meanwhile, or until ctx ends. A tool that failed at
// its task is a tool.Result with IsError set; an error return means the call could not be
// made. Errors wrapping ErrUnavailable end the run.
type Executor interface {
	Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error)
}

// Interrupter is an Executor that can stop the terminal command of a call the agent gave up
// on when it was paused. Interrupt reports the command as a terminal call would, or false when
// none was running or waiting to be reported.
type Interrupter interface {
	Interrupt(ctx context.Context) (tool.Result, bool, error)
}

// ErrUnavailable: the sandbox is gone or broken; no tool can run any more.
var ErrUnavailable = errors.New("the sandbox is not available")

// Options are an Agent's collaborators.
type Options struct {
	Config Config
	// LLM is the model client, already wrapped with a retry policy. Nil is allowed for a
	// conversation that only replays: a step that needs the model then ends the run with an
	// error event saying that no model is configured.
	LLM   llm.Client
	Tools Executor
	Log   Log
	// Metrics accumulates usage and cost; nil starts from zero.
	Metrics *llm.Metrics
	// UpdateTools is called before each model call; when it reports a change, the tools it
	// returns replace Config.Tools from that call on (an MCP server's tools changed). nil
	// keeps Config.Tools for the whole run.
	UpdateTools func(ctx context.Context) ([]tool.Tool, bool)
	// PauseRequested is polled between steps; nil never pauses. To pause without waiting
	// for the step in flight, also cancel Run's context with the cause ErrPaused.
	PauseRequested func() bool
	// Observer is told of every step and tool call; nil tells nobody.
	Observer Observer
	Logger   *slog.Logger
	Now      func() time.Time
	NewID    func() string
}

// Observer records what loops do, for the server's metrics. One Observer serves every
// conversation's loop, so its methods are called from many goroutines at once; they must not
// block.
type Observer interface {
	// Step records one step: a model call and what the loop does with its answer.
	Step()
	// ToolCall records one tool call the loop ran: the tool, how long it took, and whether
	// it failed (could not be made, or answered an error).
	ToolCall(tool string, d time.Duration, failed bool)
}

type noObserver struct{}

func (noObserver) Step()                                {}
func (noObserver) ToolCall(string, time.Duration, bool) {}
