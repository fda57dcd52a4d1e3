package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/tool"
)

// The conversation API: what OpenHands clients call at a conversation's conversation_url
// (an agent server's API), served by agentd itself under /agent-server/{sandbox_id}. The
// sandbox's session key, or the owner's API key, authenticates.

// agentServerPrefix is the path of a sandbox's AGENT_SERVER URL.
const agentServerPrefix = "/agent-server/"

// agentConversation reads the conversation in the path; it must live in the sandbox in the
// path.
func (a *API) agentConversation(r *http.Request) (conversation.View, error) {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return conversation.View{}, err
	}
	return a.sandboxConversation(r.Context(), caller(r).ID, r.PathValue("sandbox_id"), id)
}

// sandboxConversation reads the owner's conversation; it must live in the sandbox.
func (a *API) sandboxConversation(ctx context.Context, ownerID, sandboxID, convID string) (conversation.View, error) {
	v, err := a.d.Conversations.Get(ctx, ownerID, convID)
	if err != nil {
		return conversation.View{}, err
	}
	if v.SandboxID != sandboxID {
		return conversation.View{}, conversation.ErrNotFound
	}
	return v, nil
}

// dashedID shows a 32-hex id as a dashed UUID, as agent servers do; other ids as they are.
func dashedID(id string) string {
	if n, err := normalizeUUID(id); err == nil && n == id {
		return id[0:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]
	}
	return id
}

func (a *API) agentServerAlive(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.AliveResponse{Status: "ok"})
	return nil
}

func (a *API) getAgentConversation(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.agentConversationInfo(r.Context(), caller(r).ID, v))
	return nil
}

func (a *API) agentConversationInfo(ctx context.Context, ownerID string, v conversation.View) apitypes.AgentConversationInfo {
	c := v.Conversation
	ag := a.d.Conversations.Agent(ctx, ownerID, v)
	status := apitypes.ExecutionStatus(c.ExecutionStatus)
	if status == "" {
		status = "idle"
	}
	info := apitypes.AgentConversationInfo{
		ID: dashedID(c.ID), Title: optString(c.Title), ExecutionStatus: status,
		Agent:                apitypes.AgentSpec{Kind: "Agent", LLM: apitypes.AgentLLM{Model: ag.Model, UsageID: "default"}},
		Workspace:            apitypes.AgentWorkspace{Kind: "LocalWorkspace", WorkingDir: ag.Workspace},
		MaxIterations:        ag.MaxIterations,
		StuckDetection:       ag.StuckDetection,
		ConfirmationPolicy:   policyWire(c.ConfirmationPolicy),
		Stats:                apitypes.ConversationStats{UsageToMetrics: map[string]apitypes.MetricsSnapshot{}},
		Metrics:              a.metricsOf(c.Metrics),
		Tags:                 map[string]string{},
		ParentConversationID: c.ParentID, SubConversationIDs: orEmpty(v.SubConversationIDs),
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	for _, t := range tool.Builtin() {
		info.Agent.Tools = append(info.Agent.Tools, apitypes.AgentTool{Name: t.Name})
	}
	if info.Metrics != nil {
		info.Stats.UsageToMetrics["default"] = *info.Metrics
	}
	return info
}

func (a *API) sendAgentMessage(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var req apitypes.SendMessageRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Role != nil && *req.Role != "user" {
		return errNotUserRole
	}
	m := messageOf(req.Content)
	if err := a.d.Conversations.SendMessage(r.Context(), caller(r).ID, v.ID, m, req.Run); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

// setAgentSecrets gives the conversation more secrets (OpenHands' SDK sends those a
// RemoteConversation is made with, and update_secrets), kept as its start request's are.
func (a *API) setAgentSecrets(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var req apitypes.ConversationSecretsRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	u := conversation.SecretsUpdate{Inline: req.Secrets.Inline, Lookups: req.Secrets.Lookups}
	if err := a.d.Conversations.AddSecrets(r.Context(), caller(r).ID, v.ID, u); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

// errNotUserRole refuses a message from anyone but the user.
var errNotUserRole = problem("value_error", "Value error, only messages with role user can be sent", "body", "role")

// messageOf reads a message's content parts: its texts, one per line, and its images.
func messageOf(content []apitypes.Content) conversation.Message {
	var m conversation.Message
	var texts []string
	for _, part := range content {
		switch {
		case part.Text != nil:
			texts = append(texts, part.Text.Text)
		case part.Image != nil:
			m.ImageURLs = append(m.ImageURLs, part.Image.ImageURLs...)
		}
	}
	m.Text = strings.Join(texts, "\n")
	return m
}

func (a *API) agentFinalResponse(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	text, err := a.d.Conversations.FinalResponse(r.Context(), caller(r).ID, v.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.AgentFinalResponse{Response: text})
	return nil
}

func (a *API) runAgent(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	if err := a.d.Conversations.RunAgent(r.Context(), caller(r).ID, v.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) pauseAgent(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	if err := a.d.Conversations.PauseAgent(r.Context(), caller(r).ID, v.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

// eventKind accepts the short kind and OpenHands' fully qualified class name.
func eventKind(k string) string {
	k = strings.TrimSpace(k)
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		k = k[i+1:]
	}
	return k
}

func sortDesc(o *apitypes.EventSortOrder) bool {
	return o != nil && *o == "TIMESTAMP_DESC"
}

func (a *API) searchAgentEvents(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationEventSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := event.Filter{ConversationID: v.ID, Kind: eventKind(q.Kind), Source: q.Source, Body: q.Body,
		TimestampGTE: q.TimestampGTE, TimestampLT: q.TimestampLT}
	evs, next, err := a.d.Conversations.SearchEvents(r.Context(), caller(r).ID, f, sortDesc(q.SortOrder), paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	writeEventPage(w, evs, next)
	return nil
}

func (a *API) countAgentEvents(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationEventCountQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := event.Filter{ConversationID: v.ID, Kind: eventKind(q.Kind), Source: q.Source, Body: q.Body,
		TimestampGTE: q.TimestampGTE, TimestampLT: q.TimestampLT}
	n, err := a.d.Conversations.CountEvents(r.Context(), caller(r).ID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (a *API) getAgentEvent(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	evs, err := a.d.Conversations.GetEvents(r.Context(), caller(r).ID, []string{r.PathValue("event_id")})
	if err != nil {
		return err
	}
	if evs[0] == nil || evs[0].ConversationID != v.ID {
		return event.ErrNotFound
	}
	writeJSON(w, http.StatusOK, apitypes.Event(evs[0].Body))
	return nil
}
