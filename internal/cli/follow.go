package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
)

// The outcome of a followed conversation: how its agent's run ended, which decides the exit
// code.

// outcomeOf is the error (nil for success) that ends a follow whose agent reached status, and
// whether the status ends the follow at all.
func outcomeOf(status string) (error, bool) {
	switch status {
	case "finished", "idle":
		return nil, true
	case "error", "stuck":
		return &outcomeError{code: ExitAgentError, msg: "the agent stopped: " + status}, true
	case "waiting_for_confirmation":
		return &outcomeError{code: ExitAgentWaiting, msg: "the agent waits for you to confirm its next actions (agentd conversations send, or the web app)"}, true
	case "paused":
		return &outcomeError{code: ExitAgentWaiting, msg: "the agent was paused (agentd conversations resume continues it)"}, true
	}
	return nil, false
}

// follower prints a conversation's events as they come and tracks its agent's status.
type follower struct {
	a    *app
	cmd  *cobra.Command
	c    *apiclient.Client
	conv string
	// status is the last execution status the log recorded ("" before any).
	status string
	// answer makes a follow wait for the agent to run before its idle or finished ends it: a
	// message to an agent at rest is recorded as idle before the agent starts answering it.
	answer, ran bool
	r           *renderer
	json        bool
	seen        map[string]bool
}

func (a *app) newFollower(cmd *cobra.Command, c *apiclient.Client, conv string) *follower {
	return &follower{a: a, cmd: cmd, c: c, conv: conv, json: jsonOut(cmd), seen: map[string]bool{},
		r: &renderer{w: a.env.Stdout, st: a.style(a.env.Stdout)}}
}

// show prints one event of the log (once) and notes the status it records.
func (f *follower) show(raw json.RawMessage, h apiclient.EventHeader) error {
	if h.ID != "" {
		if f.seen[h.ID] {
			return nil
		}
		f.seen[h.ID] = true
	}
	if h.Kind == "ConversationStateUpdateEvent" {
		var su struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(raw, &su) == nil {
			switch su.Key {
			case "full_state":
				return nil // the socket's opening state, not an event of the log
			case "execution_status":
				_ = json.Unmarshal(su.Value, &f.status)
				if f.status == "running" {
					f.ran = true
				}
			}
		}
	}
	if f.json {
		return printJSON(f.a.env.Stdout, raw)
	}
	f.r.render(raw)
	return nil
}

// history prints the log as it is and returns the newest event, from which the live stream
// goes on ("" timestamp when the log is empty).
func (f *follower) history(ctx context.Context) (apiclient.EventHeader, error) {
	var last apiclient.EventHeader
	p := apiclient.Page{Limit: 100}
	for {
		page, err := f.c.Events(ctx, f.conv, p)
		if err != nil {
			return last, err
		}
		for _, raw := range page.Items {
			var h apiclient.EventHeader
			if json.Unmarshal(raw, &h) != nil {
				continue
			}
			if err := f.show(json.RawMessage(raw), h); err != nil {
				return last, err
			}
			last = h
		}
		if page.NextPageID == nil {
			return last, nil
		}
		p.PageID = *page.NextPageID
	}
}

// skipUpTo marks the newest events seen without printing them: a follow that starts now
// shows only what comes after. It returns the newest.
func (f *follower) skipUpTo(ctx context.Context) (apiclient.EventHeader, error) {
	page, err := f.c.LatestEvents(ctx, f.conv, 50)
	if err != nil {
		return apiclient.EventHeader{}, err
	}
	var newest apiclient.EventHeader
	for i, raw := range page.Items {
		var h apiclient.EventHeader
		if json.Unmarshal(raw, &h) != nil {
			continue
		}
		f.seen[h.ID] = true
		if i == 0 {
			newest = h
		}
	}
	return newest, nil
}

// live prints the events after from as they are stored. With untilDone it returns once the
// agent stops running (the outcome as the error); otherwise it runs until ctx ends or the
// conversation is deleted.
func (f *follower) live(ctx context.Context, sandboxID string, from apiclient.EventHeader, untilDone bool) error {
	var outcome error
	o := apiclient.FollowOptions{FromStart: from.Timestamp == "", After: from}
	err := f.c.FollowEvents(ctx, sandboxID, f.conv, o, func(raw json.RawMessage, h apiclient.EventHeader) (bool, error) {
		if err := f.show(raw, h); err != nil {
			return true, err
		}
		if !untilDone || h.Kind != "ConversationStateUpdateEvent" {
			return false, nil
		}
		if f.answer && !f.ran && (f.status == "idle" || f.status == "finished") {
			return false, nil // the message's own idle, before the agent answers it
		}
		res, ends := outcomeOf(f.status)
		outcome = res
		return ends, nil
	})
	if err != nil {
		return err
	}
	return outcome
}

// waitStarted waits for a start task to end, showing its steps, and returns its conversation.
func (a *app) waitStarted(ctx context.Context, c *apiclient.Client, taskID string) (apitypes.AppConversation, error) {
	sp := a.startSpinner("starting")
	defer sp.stop()
	delay := 100 * time.Millisecond
	for {
		t, err := c.StartTask(ctx, taskID)
		if err != nil {
			return apitypes.AppConversation{}, err
		}
		sp.set(fmt.Sprintf("starting: %s", t.Status))
		switch t.Status {
		case "READY":
			return c.Conversation(ctx, deref(t.AppConversationID))
		case "ERROR":
			return apitypes.AppConversation{}, &outcomeError{code: ExitAgentError,
				msg: "the conversation did not start: " + deref(t.Detail)}
		}
		select {
		case <-ctx.Done():
			return apitypes.AppConversation{}, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// waitStartedConversation waits until a starting conversation has its sandbox.
func (a *app) waitStartedConversation(ctx context.Context, c *apiclient.Client, id string) (apitypes.AppConversation, error) {
	sp := a.startSpinner("waiting for the conversation's sandbox")
	defer sp.stop()
	delay := 100 * time.Millisecond
	for {
		conv, err := c.Conversation(ctx, id)
		if err != nil || conv.SandboxID != "" {
			return conv, err
		}
		if conv.ConversationStatus == "ERROR" {
			return conv, &outcomeError{code: ExitAgentError, msg: "the conversation did not start"}
		}
		select {
		case <-ctx.Done():
			return conv, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
