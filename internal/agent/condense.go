package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
)

// condensePrompt asks the model for the summary that replaces the forgotten events.
const condensePrompt = `You keep the memory of a software agent that works in a sandbox for a user. The agent's history has grown too long, so the events below will be removed from what it sees and replaced by your summary. Write the summary so that the agent can carry on as if it still had the full history.

Use these sections, and keep every concrete detail the agent will need (paths, commands, names, numbers, error messages):
USER_CONTEXT: what the user asked for, their requirements and preferences.
TASKS: the task list with the status of each task (done, in progress, to do).
DONE: what has been completed, and how it was verified.
CODE_STATE: the files that were created or changed, and what is in them now.
TESTS: which tests or checks were run and their results, including failures.
ERRORS: problems met and how they were resolved, or that they are still open.
NEXT: what the agent was about to do.

If the events start with an earlier summary, fold it into yours: nothing it says may be lost.`

// maxRendered bounds the text of one event in the summary request; it shrinks when even
// that request is too long for the model.
const maxRendered = 4000

// condenseIfNeeded condenses the view when it holds more events than allowed, or, when
// force is set (the model said the prompt is too long), whatever its size. A forced
// condensation that finds nothing to forget is an error.
func (a *Agent) condenseIfNeeded(ctx context.Context, force bool) error {
	view := a.view.items
	limit := a.cfg.CondenserMaxEvents
	if !force && (limit < 0 || len(view) <= limit) {
		return nil
	}
	tail := limit / 2
	if force || limit < 0 {
		tail = len(view) / 2
	}
	from, to, ok := forgetRange(view, a.cfg.CondenserKeepFirst, len(view)-tail)
	if !ok {
		if force {
			return errors.New("the history cannot be condensed further")
		}
		return nil
	}
	summary, respID, err := a.summarize(ctx, view[from:to])
	if err != nil {
		return fmt.Errorf("condense: %w", err)
	}
	forgotten := make([]string, 0, to-from)
	for _, it := range view[from:to] {
		forgotten = append(forgotten, it.id)
	}
	offset := from
	ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceEnvironment, &event.Condensation{
		ForgottenEventIDs: forgotten, Summary: &summary, SummaryOffset: &offset, LLMResponseID: respID,
	})
	if err != nil {
		return err
	}
	stats, err := a.statsEvent()
	if err != nil {
		return err
	}
	a.log.Info("history condensed", "forgotten", len(forgotten), "view", len(view))
	return a.append(ctx, stats, ev)
}

// forgetRange picks the events to forget: from the end of the first keepFirst events to the
// start of the tail, both moved to positions that separate no tool call from its result
// (the first forward, the second backward). ok is false when nothing is left to forget.
func forgetRange(view []item, keepFirst, tailStart int) (from, to int, ok bool) {
	pending := pendingAt(view)
	from = min(keepFirst, len(view))
	for from < len(view) && pending[from] > 0 {
		from++
	}
	to = min(max(tailStart, 0), len(view))
	for to > from && pending[to] > 0 {
		to--
	}
	to = max(to, from)
	return from, to, to > from
}

// summarize asks the model to summarize the events; a request that is itself too long is
// retried with each event cut shorter.
func (a *Agent) summarize(ctx context.Context, items []item) (summary, responseID string, err error) {
	if a.o.LLM == nil {
		return "", "", errNoLLM
	}
	limit := maxRendered
	for attempt := 0; ; attempt++ {
		var b strings.Builder
		b.WriteString("Events to summarize, oldest first:\n")
		for _, it := range items {
			b.WriteString("\n")
			b.WriteString(render(it, limit))
		}
		resp, err := a.o.LLM.Complete(ctx, llm.Request{
			Model: a.cfg.Model,
			Messages: []llm.Message{
				{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart(condensePrompt)}},
				{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(b.String())}},
			},
			MaxTokens: a.cfg.MaxTokens,
		})
		var le *llm.Error
		if errors.As(err, &le) && le.Kind == llm.KindContextWindow && attempt < 4 {
			limit = limit * 4 / 5
			continue
		}
		if err != nil {
			return "", "", err
		}
		a.o.Metrics.Add(cmpOr(resp.Model, a.cfg.Model), resp.Usage, resp.ResponseID)
		text := strings.TrimSpace(resp.Message.Text())
		if text == "" {
			text = "(The earlier events were removed; the model returned no summary of them.)"
		}
		return text, resp.ResponseID, nil
	}
}

// render writes one event for the summary request.
func render(it item, limit int) string {
	if it.e == nil {
		return "[EARLIER SUMMARY]\n" + clip(it.text, limit*2)
	}
	switch b := it.e.body.(type) {
	case *event.MessageEvent:
		who := map[string]string{event.SourceUser: "USER", event.SourceAgent: "AGENT", event.SourceEnvironment: "SYSTEM NOTE"}[b.Source]
		text := strings.Join(b.Texts(), "\n")
		if n := len(b.ImageURLs()); n > 0 {
			text += fmt.Sprintf("\n(%d image(s) attached)", n)
		}
		return "[" + who + "]\n" + clip(text, limit)
	case *event.ActionEvent:
		s := "[ACTION " + b.ToolName + "]"
		for _, t := range b.Thought {
			s += "\n" + clip(t.Text, limit)
		}
		return s + "\n" + clip(b.ToolCall.Arguments, limit)
	case *event.ObservationEvent:
		return "[RESULT " + b.ToolName + "]\n" + clip(it.e.ev.LLMText, limit)
	case *event.AgentErrorEvent:
		return "[ERROR " + b.ToolName + "]\n" + clip(b.Error, limit)
	case *event.UserRejectObservation:
		return "[REJECTED " + b.ToolName + "]\n" + clip(b.RejectionReason, limit)
	}
	return ""
}

// clip keeps the head and tail of s within about limit bytes.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	head, tail := limit*2/3, limit/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut ...]\n", start-head) + s[start:]
}
