package agent

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
)

// entry is one event of the log with its decoded body.
type entry struct {
	ev   event.Event
	body event.Body
}

// item is one element of the view, the part of the log the model sees: a message, an action,
// the result of an action (an observation, an agent error or the user's rejection), or a
// condensation summary.
type item struct {
	id   string
	e    *entry // nil for a summary
	text string // a summary's text
}

func (it item) action() *event.ActionEvent {
	if it.e == nil {
		return nil
	}
	a, _ := it.e.body.(*event.ActionEvent)
	return a
}

// resultOf returns the tool call id a result answers, or "".
func (it item) resultOf() string {
	if it.e == nil {
		return ""
	}
	id, _ := resultCallID(it.e.body)
	return id
}

// resultCallID returns the tool call id b answers, and whether b is the result of an action
// (an observation, an agent error or the user's rejection).
func resultCallID(b event.Body) (string, bool) {
	switch b := b.(type) {
	case *event.ObservationEvent:
		return b.ToolCallID, true
	case *event.AgentErrorEvent:
		return b.ToolCallID, true
	case *event.UserRejectObservation:
		return b.ToolCallID, true
	}
	return "", false
}

// buildView applies the condensations of the log, in order, to its model-visible events.
func buildView(log []*entry) []item {
	var v viewState
	for _, e := range log {
		v.add(e)
	}
	return v.items
}

// viewState is a view built incrementally: the model-visible events of the log read so far,
// with the condensations among them applied. A log only grows, so the view of a longer log
// is this one with the new events added; only a condensation changes items already there,
// and it counts in gen. The items belong to the state: callers read them only.
type viewState struct {
	items []item
	gen   int
}

// add brings the view up to e, the next event of the log.
func (v *viewState) add(e *entry) {
	switch b := e.body.(type) {
	case *event.MessageEvent, *event.ActionEvent, *event.ObservationEvent:
		v.items = append(v.items, item{id: e.ev.ID, e: e})
	case *event.AgentErrorEvent, *event.UserRejectObservation:
		v.items = append(v.items, item{id: e.ev.ID, e: e})
	case *event.Condensation:
		forgotten := make(map[string]bool, len(b.ForgottenEventIDs))
		for _, id := range b.ForgottenEventIDs {
			forgotten[id] = true
		}
		// A new array: slices a caller still holds keep what they showed, and the forgotten
		// events are held no more.
		kept := make([]item, 0, len(v.items)+1)
		for _, it := range v.items {
			if !forgotten[it.id] {
				kept = append(kept, it)
			}
		}
		if b.Summary != nil {
			at := 0
			if b.SummaryOffset != nil {
				at = min(max(*b.SummaryOffset, 0), len(kept))
			}
			kept = slices.Insert(kept, at, item{id: b.SummaryID(), text: *b.Summary})
		}
		v.items = kept
		v.gen++
	}
}

// pendingAt returns, for every position i of the view (0..len), how many tool calls made
// before i have no result before i. A position where none is pending is a safe place to cut
// the view: no tool call is separated from its result.
func pendingAt(view []item) []int {
	out := make([]int, len(view)+1)
	pending := map[string]bool{}
	for i, it := range view {
		out[i] = len(pending)
		if a := it.action(); a != nil {
			pending[a.ToolCallID] = true
		} else if id := it.resultOf(); id != "" {
			delete(pending, id)
		}
	}
	out[len(view)] = len(pending)
	return out
}

// buildMessages turns the view into the model's messages: the system message, then one
// message per event, with the actions of one model response merged into one assistant
// message and each followed by exactly one tool message per call. Messages that arrived
// while tool calls were unanswered wait until the calls are answered; calls never answered
// (the loop was interrupted) get a result saying so, as providers reject unanswered calls.
// With vision, the images of tool observations (an MCP tool's) follow their text.
func buildMessages(system string, view []item, vision bool) []llm.Message {
	b := newMessageBuilder(system, vision)
	for _, it := range view {
		b.add(it)
	}
	b.backfill()
	return b.msgs
}

func newMessageBuilder(system string, vision bool) *messageBuilder {
	b := &messageBuilder{pending: map[string]string{}, assistant: -1, vision: vision}
	b.msgs = append(b.msgs, llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart(system)}})
	return b
}

// promptState is the prompt built incrementally: the messages of the view's first fed items
// (of the view's generation gen), to which each step adds the items new since the last. A
// condensation, which changes the view before its end, makes it start again, and so does a
// change of vision (whether tool observations' images are sent).
type promptState struct {
	b   *messageBuilder
	fed int
	gen int
}

// messages returns the model's messages for system and view (of generation gen), as
// buildMessages does, building only what is new since the last call.
func (p *promptState) messages(system string, view []item, gen int, vision bool) []llm.Message {
	if p.b == nil || p.gen != gen || p.fed > len(view) || p.b.vision != vision {
		p.b, p.fed, p.gen = newMessageBuilder(system, vision), 0, gen
	}
	if p.b.msgs[0].Parts[0].Text != system {
		p.b.set(0, llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart(system)}})
	}
	for _, it := range view[p.fed:] {
		p.b.add(it)
	}
	p.fed = len(view)
	return p.b.snapshot()
}

// snapshot returns the messages as they stand, with the calls still pending answered and the
// messages waiting for them placed (backfill), leaving the builder as it is. What it returns
// never changes afterwards: when nothing waits, it is the builder's own messages, which the
// builder then copies before it changes one of them (set), rather than a copy made at every
// step of a prompt the model sees again and again; otherwise a copy is backfilled, with its
// slices clipped so that what it appends never lands in the builder's arrays.
func (b *messageBuilder) snapshot() []llm.Message {
	if len(b.pending) == 0 && len(b.deferred) == 0 {
		b.shared = len(b.msgs)
		return b.msgs[:len(b.msgs):len(b.msgs)]
	}
	c := &messageBuilder{
		msgs: slices.Clone(b.msgs), pending: maps.Clone(b.pending), order: slices.Clone(b.order),
		assistant: b.assistant, lastResponse: b.lastResponse, deferred: slices.Clone(b.deferred),
		vision: b.vision,
	}
	for i := range c.msgs {
		c.msgs[i].Parts = slices.Clip(c.msgs[i].Parts)
		c.msgs[i].ToolCalls = slices.Clip(c.msgs[i].ToolCalls)
	}
	c.backfill()
	return c.msgs
}

// set replaces message i, first copying the messages if a snapshot returned them (shared).
// A message's parts and tool calls may grow in place all the same: a snapshot's copy of the
// message keeps its own length of them.
func (b *messageBuilder) set(i int, m llm.Message) {
	if i < b.shared {
		b.msgs, b.shared = slices.Clone(b.msgs), 0
	}
	b.msgs[i] = m
}

type messageBuilder struct {
	msgs []llm.Message
	// pending maps the unanswered calls of the last assistant message to their tool names;
	// order keeps their order.
	pending map[string]string
	order   []string
	// assistant is the index of the assistant message whose calls are pending (-1 when none)
	// and lastResponse its response id: later actions of the same response join it.
	assistant    int
	lastResponse string
	deferred     []llm.Message
	// vision: the model takes images.
	vision bool
	// shared is how many of msgs the last snapshot returned as they are: set copies them
	// before it changes one.
	shared int
}

func (b *messageBuilder) add(it item) {
	if it.e == nil {
		b.message(llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(summaryPrefix + it.text)}})
		return
	}
	switch ev := it.e.body.(type) {
	case *event.MessageEvent:
		b.message(messageOf(ev))
	case *event.ActionEvent:
		b.action(ev)
	case *event.ObservationEvent:
		var images []string
		if b.vision {
			images = ev.ImageURLs()
		}
		b.result(ev.ToolCallID, ev.ToolName, it.e.ev.LLMText, images...)
	case *event.AgentErrorEvent:
		b.result(ev.ToolCallID, ev.ToolName, ev.Error)
	case *event.UserRejectObservation:
		b.result(ev.ToolCallID, ev.ToolName, ev.LLMText())
	}
}

// summaryPrefix introduces a condensation summary to the model.
const summaryPrefix = "Summary of the earlier part of this conversation, which is no longer shown in full:\n\n"

func messageOf(ev *event.MessageEvent) llm.Message {
	role := llm.RoleUser
	if ev.Source == event.SourceAgent {
		role = llm.RoleAssistant
	}
	m := llm.Message{Role: role}
	for _, t := range ev.Texts() {
		m.Parts = append(m.Parts, llm.TextPart(t))
	}
	if role == llm.RoleUser {
		for _, u := range ev.ImageURLs() {
			m.Parts = append(m.Parts, llm.ImagePart(u))
		}
	}
	return m
}

// message adds a user or assistant message, after the pending results if any.
func (b *messageBuilder) message(m llm.Message) {
	if len(b.pending) > 0 {
		b.deferred = append(b.deferred, m)
		return
	}
	b.emit(m)
}

// emit appends m, merging consecutive user messages into one turn.
func (b *messageBuilder) emit(m llm.Message) {
	if n := len(b.msgs); n > 0 && m.Role == llm.RoleUser && b.msgs[n-1].Role == llm.RoleUser {
		merged := b.msgs[n-1]
		merged.Parts = append(merged.Parts, m.Parts...)
		b.set(n-1, merged)
		return
	}
	b.msgs = append(b.msgs, m)
}

func (b *messageBuilder) action(a *event.ActionEvent) {
	tc := llm.ToolCall{ID: a.ToolCallID, Name: a.ToolCall.Name, Arguments: safeArguments(a.ToolCall.Arguments)}
	if tc.Name == "" {
		tc.Name = a.ToolName
	}
	if b.assistant >= 0 && b.lastResponse == a.LLMResponseID && a.LLMResponseID != "" {
		joined := b.msgs[b.assistant]
		joined.ToolCalls = append(joined.ToolCalls, tc)
		b.set(b.assistant, joined)
	} else {
		b.backfill()
		m := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc}}
		var thought []string
		for _, t := range a.Thought {
			if strings.TrimSpace(t.Text) != "" {
				thought = append(thought, t.Text)
			}
		}
		if len(thought) > 0 {
			m.Parts = []llm.Part{llm.TextPart(strings.Join(thought, "\n"))}
		}
		b.msgs = append(b.msgs, m)
		b.assistant, b.lastResponse = len(b.msgs)-1, a.LLMResponseID
	}
	b.pending[tc.ID] = tc.Name
	b.order = append(b.order, tc.ID)
}

func (b *messageBuilder) result(callID, name, text string, images ...string) {
	if _, ok := b.pending[callID]; !ok {
		return // its call is not in the view; the providers would reject it
	}
	delete(b.pending, callID)
	parts := []llm.Part{llm.TextPart(text)}
	for _, u := range images {
		parts = append(parts, llm.ImagePart(u))
	}
	b.msgs = append(b.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: callID, Name: name, Parts: parts})
	if len(b.pending) == 0 {
		b.flush()
	}
}

// backfill answers the calls still pending with a note that no result was recorded.
func (b *messageBuilder) backfill() {
	for _, id := range b.order {
		if name, ok := b.pending[id]; ok {
			b.msgs = append(b.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: name, Parts: []llm.Part{llm.TextPart(noResultRecorded)}})
			delete(b.pending, id)
		}
	}
	b.flush()
}

func (b *messageBuilder) flush() {
	b.order = b.order[:0]
	b.assistant, b.lastResponse = -1, ""
	deferred := b.deferred
	b.deferred = nil
	for _, m := range deferred {
		b.emit(m)
	}
}
