package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// maxPageEvents bounds the events a conversation's page shows at first: the latest ones.
const maxPageEvents = 2000

// statusView is a conversation's status line: where it is, what it costs, and what the user
// may do now.
type statusView struct {
	ID, SandboxID string
	Conversation  conversation.Status
	SandboxStatus sandbox.Status
	// Execution is the agent's status, while its sandbox runs.
	Execution  string
	Task       conversation.TaskStatus
	TaskDetail string
	Tokens     int64
	Cost       float64
	Budget     *float64
	Model      string
	// CanResume is "agent" (run the paused agent) or "sandbox" (resume the stopped sandbox).
	CanResume                      string
	CanPause, CanStop, CanDownload bool
	Waiting                        bool
	Problem                        string
}

func newStatusView(v conversation.View) statusView {
	c := v.Conversation
	st := statusView{ID: c.ID, SandboxID: c.SandboxID, Conversation: conversation.StatusOf(v), SandboxStatus: v.SandboxStatus}
	m := metricsOf(c.Metrics)
	st.Cost, st.Budget, st.Model = m.AccumulatedCost, m.MaxBudgetPerTask, m.ModelName
	if u := m.AccumulatedTokenUsage; u != nil {
		st.Tokens = u.PromptTokens + u.CompletionTokens
	}
	if st.Model == "" && c.LLMModel != nil {
		st.Model = *c.LLMModel
	}
	if v.TaskStatus != "" && v.TaskStatus != conversation.TaskReady {
		st.Task, st.TaskDetail = v.TaskStatus, v.TaskDetail
	}
	running := v.SandboxStatus == sandbox.StatusRunning && c.SandboxID != ""
	if running && st.Conversation == conversation.StatusRunning {
		st.Execution = c.ExecutionStatus
		if st.Execution == "" {
			st.Execution = "idle"
		}
	}
	switch {
	case st.Conversation == conversation.StatusStopped && v.SandboxStatus == sandbox.StatusPaused:
		st.CanResume = "sandbox"
	case st.Execution == "paused":
		st.CanResume = "agent"
	}
	st.CanPause = st.Execution == "running"
	st.Waiting = st.Execution == "waiting_for_confirmation"
	st.CanStop, st.CanDownload = running, running
	if st.Conversation == conversation.StatusStopped && v.SandboxStatus == sandbox.StatusMissing && c.SandboxID != "" {
		st.Problem = "The conversation's sandbox is gone: its workspace cannot be reached any more."
	}
	return st
}

type conversationData struct {
	ID, Title, Repository, Branch string
	Status                        statusView
	Events                        []eventView
	// LastEventID is the last event of the log the page shows: its live stream starts
	// after it.
	LastEventID string
	// Earlier counts the events left out before the first one shown.
	Earlier int
}

func (a *App) conversationPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	id := r.PathValue("id")
	v, err := a.d.Conversations.Get(r.Context(), s.User.ID, id)
	if err != nil {
		return err
	}
	evs, earlier, err := a.latestEvents(r.Context(), s.User.ID, id, maxPageEvents)
	if err != nil {
		return err
	}
	row := newConvRow(v)
	d := conversationData{ID: id, Title: orDefault(v.Title, "Untitled conversation"), Repository: row.Repository,
		Branch: row.Branch, Status: newStatusView(v), Events: viewEvents(evs), Earlier: earlier}
	if len(evs) > 0 {
		d.LastEventID = evs[len(evs)-1].ID
	}
	a.render(w, r, http.StatusOK, "conversation", s, d.Title, d)
	return nil
}

// latestEvents reads the last n events of a conversation, in log order, and how many come
// before them.
func (a *App) latestEvents(ctx context.Context, ownerID, convID string, n int) ([]event.Event, int, error) {
	f := event.Filter{ConversationID: convID}
	var out []event.Event
	cursor := ""
	for len(out) < n {
		page, next, err := a.d.Conversations.SearchEvents(ctx, ownerID, f, true, paging.Query{Limit: min(paging.MaxLimit, n-len(out)), Cursor: cursor})
		if err != nil {
			return nil, 0, fmt.Errorf("read events of %s: %w", convID, err)
		}
		out = append(out, page...)
		if next == "" {
			slices.Reverse(out)
			return out, 0, nil
		}
		cursor = next
	}
	slices.Reverse(out)
	total, err := a.d.Conversations.CountEvents(ctx, ownerID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("count events of %s: %w", convID, err)
	}
	return out, max(0, total-len(out)), nil
}
