// Package agent is the agent loop: it turns a conversation's event log into a prompt, asks
// the model for the next step, runs the tool calls (in the sandbox through an Executor, or
// here for finish, think and task_tracker), and appends every action, observation and message
// to the log before anyone sees it. It also decides when to stop: the agent finished or waits
// for the user, the iteration limit, a stuck pattern, an unrecoverable error, or a pause. When
// the history outgrows the model's context it condenses older events into a model-written
// summary; a recorded trajectory (replay) is executed without the model. Under the
// conversation's confirmation policy, risky actions wait for the user before they run.
//
// The log is the state: an Agent rebuilds everything it needs from the events, so a loop
// picked up after a restart continues where the last one stopped. The package knows nothing
// of HTTP or SQL; the conversation runner supplies the log, the model client and the executor.
package agent
