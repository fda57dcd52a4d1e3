package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/google/uuid"
)

// The bash API runs commands for a client of the sandbox, out of band of any conversation:
// the agent never sees them. Each command runs as terminal commands do (the runtime's user,
// its environment without the session key, its own process group, killed whole at its
// timeout) and leaves two events: a BashCommand when it starts and a BashOutput with its
// stdout, stderr and exit code when it ends.
//
// The events live in the runtime's memory only, so a restarted runtime has none. At most
// maxBashEvents are kept; past that the oldest are dropped, the events of a command still
// running included (its output is then recorded alone). With output bounded per stream,
// that holds the events' memory to some tens of MiB at worst.

const (
	// maxBashEvents bounds the events a runtime keeps.
	maxBashEvents = 1000
	// maxBashStreamBytes bounds what is kept of each of a command's stdout and stderr: its
	// first and last halves.
	maxBashStreamBytes = 64 << 10
)

// errClosed reports a runtime that is shutting down.
var errClosed = errors.New("the runtime is shutting down")

// bashEvents holds the bash events of a runtime and owns the commands that make them:
// close stops them.
type bashEvents struct {
	s *Server

	mu     sync.Mutex
	events []runtimeclient.BashEvent // oldest first
	done   map[string]chan struct{}  // closed when a command's output is recorded
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newBashEvents(s *Server) *bashEvents {
	ctx, cancel := context.WithCancel(context.Background())
	return &bashEvents{s: s, done: map[string]chan struct{}{}, ctx: ctx, cancel: cancel}
}

// start records req (its cwd already checked, dir the directory it resolves to) and runs it
// in the background. The returned channel is closed once its output is recorded.
func (b *bashEvents) start(req runtimeclient.BashRequest, dir string) (runtimeclient.BashEvent, <-chan struct{}, error) {
	cmd := runtimeclient.BashEvent{
		Kind: runtimeclient.KindBashCommand, ID: uuid.NewString(), Timestamp: b.s.cfg.Now().UTC(),
		Command: req.Command, Cwd: req.Cwd, Timeout: req.Timeout,
	}
	done := make(chan struct{})
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return runtimeclient.BashEvent{}, nil, errClosed
	}
	b.appendLocked(cmd)
	b.done[cmd.ID] = done
	b.wg.Add(1)
	b.mu.Unlock()

	go func() {
		defer b.wg.Done()
		out := b.run(cmd, dir)
		b.mu.Lock()
		b.appendLocked(out)
		delete(b.done, cmd.ID)
		b.mu.Unlock()
		close(done)
	}()
	return cmd, done, nil
}

// run runs a started command to its end and returns its output event.
func (b *bashEvents) run(cmd runtimeclient.BashEvent, dir string) runtimeclient.BashEvent {
	timeout := time.Duration(cmd.Timeout) * time.Second
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()

	stdout := &headTailBuffer{limit: maxBashStreamBytes}
	stderr := &headTailBuffer{limit: maxBashStreamBytes}
	c := b.s.shellCommand(ctx, cmd.Command, dir, nil)
	code := -1
	var note string
	if wait, err := startWithOutput(c, stdout, stderr); err != nil {
		note = fmt.Sprintf("could not start the command: %v", err)
	} else {
		_ = wait() // the exit status is in ProcessState
		switch {
		case ctx.Err() != nil && b.ctx.Err() != nil:
			note = "killed: the runtime is shutting down"
		case ctx.Err() != nil:
			note = fmt.Sprintf("killed: the command ran past its timeout of %d seconds", cmd.Timeout)
		case c.ProcessState != nil:
			code = exitCode(c.ProcessState.Sys())
		}
	}
	errText := stderr.String()
	if note != "" {
		if errText != "" && errText[len(errText)-1] != '\n' {
			errText += "\n"
		}
		errText += "[" + note + "]\n"
	}
	outText := stdout.String()
	b.s.log.Debug("bash command finished", "command_id", cmd.ID, "exit_code", code)
	return runtimeclient.BashEvent{
		Kind: runtimeclient.KindBashOutput, ID: uuid.NewString(), Timestamp: b.s.cfg.Now().UTC(),
		CommandID: cmd.ID, ExitCode: &code, Stdout: &outText, Stderr: &errText,
	}
}

func (b *bashEvents) appendLocked(e runtimeclient.BashEvent) {
	if len(b.events) >= maxBashEvents {
		b.events = slices.Delete(b.events, 0, len(b.events)-maxBashEvents+1)
	}
	b.events = append(b.events, e)
}

// get returns the event with id.
func (b *bashEvents) get(id string) (runtimeclient.BashEvent, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.events, func(e runtimeclient.BashEvent) bool { return e.ID == id })
	if i < 0 {
		return runtimeclient.BashEvent{}, false
	}
	return b.events[i], true
}

// output returns the last output event of a command.
func (b *bashEvents) output(commandID string) (runtimeclient.BashEvent, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range slices.Backward(b.events) {
		if e.Kind == runtimeclient.KindBashOutput && e.CommandID == commandID {
			return e, true
		}
	}
	return runtimeclient.BashEvent{}, false
}

// search returns one page of the events that q selects. A page id that is no longer kept
// (its event was dropped) gives an empty page.
func (b *bashEvents) search(q runtimeclient.BashSearchQuery) runtimeclient.BashEventPage {
	b.mu.Lock()
	var match []runtimeclient.BashEvent
	for _, e := range b.events {
		if searchMatches(q, e) {
			match = append(match, e)
		}
	}
	b.mu.Unlock()
	if q.SortOrder != nil && *q.SortOrder == "TIMESTAMP_DESC" {
		slices.Reverse(match)
	}
	if q.PageID != "" {
		i := slices.IndexFunc(match, func(e runtimeclient.BashEvent) bool { return e.ID == q.PageID })
		if i < 0 {
			match = nil
		} else {
			match = match[i:]
		}
	}
	page := runtimeclient.BashEventPage{Items: match}
	if len(match) > q.Limit {
		next := match[q.Limit].ID
		page.Items, page.NextPageID = match[:q.Limit], &next
	}
	if page.Items == nil {
		page.Items = []runtimeclient.BashEvent{}
	}
	return page
}

func searchMatches(q runtimeclient.BashSearchQuery, e runtimeclient.BashEvent) bool {
	switch {
	case q.KindEq != nil && string(*q.KindEq) != e.Kind:
		return false
	case q.CommandIDEq != "" && !sameUUID(q.CommandIDEq, e.ID) && !sameUUID(q.CommandIDEq, e.CommandID):
		return false
	case q.TimestampGTE != nil && e.Timestamp.Before(*q.TimestampGTE):
		return false
	case q.TimestampLT != nil && !e.Timestamp.Before(*q.TimestampLT):
		return false
	case q.OrderGT != nil && (e.Kind != runtimeclient.KindBashOutput || e.Order <= *q.OrderGT):
		return false
	}
	return true
}

// sameUUID compares ids as UUIDs, so that a client may send them with or without dashes.
func sameUUID(a, b string) bool {
	ua, err := uuid.Parse(a)
	if err != nil {
		return a == b
	}
	ub, err := uuid.Parse(b)
	return err == nil && ua == ub
}

// close kills the running commands and waits until their output is recorded. Commands
// started after close are refused.
func (b *bashEvents) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
