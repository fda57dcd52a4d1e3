package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/tool"
)

// logState is what the loop knows of its log, brought up to date one event at a time: the
// view the model sees, and the few facts the loop asks of the rest. The log itself is not
// kept. An event stays in memory only while the view, the stuck window or the pending
// actions hold it, so a long conversation costs the loop what its model sees since the last
// condensation, not its whole history; and no question the loop asks reads the whole log.
type logState struct {
	lastSeq int64
	status  Status
	// policy is the conversation's confirmation policy, as the log last set it.
	policy confirm.Policy
	// hasSystemPrompt: the system prompt is recorded.
	hasSystemPrompt bool
	// agentsTurn: the last word is not the agent's own answer to the user (an agent message,
	// a finish, the end of a replay), so the agent should act.
	agentsTurn bool
	view       viewState
	stuck      stuckWatch
	pending    pendingActions
	// taskList is the task list as the last valid task_tracker observation left it.
	taskList []tool.TaskItem
	// activeSkills are the names the last StateActivatedSkills update lists.
	activeSkills []string
	// unscanned are the texts of the user messages activateKnowledge has not looked at yet;
	// kept only when scanSkills is set (the conversation has knowledge skills).
	unscanned  []string
	scanSkills bool
	// replayNext is the index of the next recorded action to replay: one after the last the
	// log shows as executed.
	replayNext int
}

// add brings the state up to e, the next event of the log.
func (s *logState) add(e *entry) {
	s.lastSeq = max(s.lastSeq, e.ev.Seq)
	s.view.add(e)
	s.stuck.add(e)
	s.pending.follow(e.body)
	switch b := e.body.(type) {
	case *event.SystemPromptEvent:
		s.hasSystemPrompt = true
	case *event.MessageEvent:
		s.agentsTurn = b.Source != event.SourceAgent
		s.replayed(b.LLMResponseID)
		if b.Source == event.SourceUser {
			text := strings.Join(b.Texts(), "\n")
			s.pending.userSaid(text)
			if s.scanSkills {
				s.unscanned = append(s.unscanned, text)
			}
		}
	case *event.ActionEvent:
		s.agentsTurn = true
		s.replayed(b.LLMResponseID)
	case *event.ObservationEvent:
		s.agentsTurn = b.ToolName != tool.Finish && !isReplayed(b.ToolCallID)
		if b.ToolName == tool.TaskTracker {
			var obs tool.TaskTrackerObservation
			if json.Unmarshal(b.Observation, &obs) == nil && !obs.IsError {
				s.taskList = obs.TaskList
			}
		}
		// Read above for the task list, the observation's object is read later only for its
		// images (the model sees the observation's text, held beside it), and it repeats
		// that text, often the longest of a step (a command's output): one that may show
		// images keeps it, the others let it go.
		if !bytes.Contains(b.Observation, []byte("image")) {
			b.Observation = nil
		}
	case *event.AgentErrorEvent:
		s.agentsTurn = !isReplayed(b.ToolCallID)
	case *event.StateUpdateEvent:
		switch b.Key {
		case event.StateExecutionStatus:
			var st Status
			if json.Unmarshal(b.Value, &st) == nil {
				s.status = st
			}
		case event.StateConfirmationPolicy:
			var p confirm.Policy
			if json.Unmarshal(b.Value, &p) == nil {
				s.policy = p
			}
		case StateActivatedSkills:
			var names []string
			if json.Unmarshal(b.Value, &names) == nil {
				s.activeSkills = names
			}
		}
	}
}

// replayed notes a response id that marks a replayed action or message.
func (s *logState) replayed(responseID string) {
	if !strings.HasPrefix(responseID, replayResponsePrefix) {
		return
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(responseID, replayResponsePrefix)); err == nil {
		s.replayNext = max(s.replayNext, n+1)
	}
}

// pendingActions are the actions of the log without a result, in the log's order, each with
// the first user message logged after it.
type pendingActions struct {
	list []pendingAction
}

type pendingAction struct {
	act *event.ActionEvent
	// after is the text of the first user message logged after the action; ok says there is
	// one.
	after string
	ok    bool
}

// follow brings the pending actions up to the next event of the log: an action waits until
// a result answers its tool call.
func (p *pendingActions) follow(b event.Body) {
	if act, ok := b.(*event.ActionEvent); ok {
		p.list = append(p.list, pendingAction{act: act})
	} else if id, ok := resultCallID(b); ok {
		p.answered(id)
	}
}

// answered drops the actions of the tool call callID: their result is recorded. So are
// their action objects, which nothing reads once the action has its result (the model and
// the condenser read the call's arguments, the stuck detector its form worked out already),
// and which would be held for as long as the view shows the action.
func (p *pendingActions) answered(callID string) {
	kept := p.list[:0]
	for _, pa := range p.list {
		if pa.act.ToolCallID != callID {
			kept = append(kept, pa)
		} else {
			pa.act.Action = nil
		}
	}
	clear(p.list[len(kept):]) // the dropped actions are not held by the array
	p.list = kept
}

// userSaid notes a user message: the first after each pending action that had none.
func (p *pendingActions) userSaid(text string) {
	for i := range p.list {
		if !p.list[i].ok {
			p.list[i].after, p.list[i].ok = text, true
		}
	}
}

// actions returns the pending actions, in order.
func (p *pendingActions) actions() []*event.ActionEvent {
	out := make([]*event.ActionEvent, len(p.list))
	for i, pa := range p.list {
		out[i] = pa.act
	}
	return out
}

// messageAfter returns the text of the first user message logged after the last pending
// action.
func (p *pendingActions) messageAfter() (string, bool) {
	if len(p.list) == 0 {
		return "", false
	}
	last := p.list[len(p.list)-1]
	return last.after, last.ok
}
