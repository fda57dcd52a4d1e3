package httpapi

import (
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
)

func (a *API) createConversationV0(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.InitSessionRequest
	raw, err := decodeBody(r, &req)
	if err != nil {
		return err
	}
	cr := conversation.CreateRequest{
		Version: conversation.V0, SelectedRepository: req.Repository, SelectedBranch: req.SelectedBranch,
		GitProvider: (*string)(req.GitProvider), ImageURLs: req.ImageURLs, Raw: raw,
		Trigger: ptr("gui"),
	}
	if req.ConversationID != nil {
		cr.ID = *req.ConversationID
		// Ids are stored in the 32-hex form: a UUID in another spelling names the same
		// conversation, and path lookups normalise the same way.
		if n, err := normalizeUUID(cr.ID); err == nil {
			cr.ID = n
		}
	}
	if req.InitialUserMsg != nil {
		cr.InitialText = *req.InitialUserMsg
	}
	if req.ReplayJSON != nil && (cr.InitialText != "" || req.SuggestedTask != nil) {
		return problem("value_error", "Value error, a replay brings its own first message: send replay_json without initial_user_msg or suggested_task", "body", "replay_json")
	}
	switch {
	case req.SuggestedTask != nil:
		cr.Trigger = nil // the task's
		if err := applySuggestedTask(req.SuggestedTask, &cr); err != nil {
			return err
		}
	case req.CreateMicroagent != nil:
		cm := req.CreateMicroagent
		cr.Trigger = ptr("microagent_management")
		if cr.SelectedRepository == nil || *cr.SelectedRepository == "" {
			cr.SelectedRepository = &cm.Repo
		}
		if cr.GitProvider == nil && cm.GitProvider != nil {
			cr.GitProvider = (*string)(cm.GitProvider)
		}
		// A client's own first message, or a replay's, stays; otherwise agentd writes the task.
		if cr.InitialText == "" && req.ReplayJSON == nil {
			cr.InitialText = conversation.MicroagentPrompt(*cr.SelectedRepository, deref(cm.Title))
		}
	}
	if err := a.checkRepository(r, cr.SelectedRepository, cr.GitProvider, false); err != nil {
		return err
	}
	if req.SuggestedTask != nil {
		// As in OpenHands, the task's message replaces initial_user_msg.
		if cr.InitialText, err = a.suggestedTaskPrompt(r, req.SuggestedTask, &cr); err != nil {
			return err
		}
	}
	cr.ReplayJSON = req.ReplayJSON
	// The start task echoes the request in the current generation's shape.
	v1 := apitypes.AppConversationStartRequest{
		SelectedRepository: cr.SelectedRepository, SelectedBranch: cr.SelectedBranch,
		GitProvider: providerPtr(cr.GitProvider), Trigger: triggerPtr(cr.Trigger), PRNumber: []int{},
	}
	if cr.InitialText != "" || len(cr.ImageURLs) > 0 {
		msg := &apitypes.SendMessageRequest{Role: ptr(apitypes.MessageRole("user")), Run: true}
		if cr.InitialText != "" {
			msg.Content = append(msg.Content, apitypes.Content{Text: &apitypes.TextContent{Type: "text", Text: cr.InitialText}})
		}
		if len(cr.ImageURLs) > 0 {
			msg.Content = append(msg.Content, apitypes.Content{Image: &apitypes.ImageContent{Type: "image", ImageURLs: cr.ImageURLs}})
		}
		v1.InitialMessage = msg
	}
	if cr.TaskRequest, err = apitypes.EchoStartRequest(v1); err != nil {
		return err
	}
	v, _, err := a.d.Conversations.Create(r.Context(), caller(r).ID, cr)
	if err != nil {
		return err
	}
	status := apitypes.ConversationStatus(conversation.StatusOf(v))
	writeJSON(w, http.StatusOK, apitypes.ConversationResponse{Status: "ok", ConversationID: v.ID, ConversationStatus: &status})
	return nil
}

// conversationIDFromPath applies OpenHands' checks on path ids (400 with a reason).
func conversationIDFromPath(r *http.Request) (string, error) {
	id := r.PathValue("conversation_id")
	switch {
	case len(id) > 100:
		return "", errStatus(http.StatusBadRequest, "Conversation ID is too long")
	case strings.ContainsRune(id, 0):
		return "", errStatus(http.StatusBadRequest, "Conversation ID contains invalid characters")
	case strings.Contains(id, "..") || strings.ContainsAny(id, `/\`):
		return "", errStatus(http.StatusBadRequest, "Conversation ID contains invalid path characters")
	}
	for _, c := range id {
		if c < 32 {
			return "", errStatus(http.StatusBadRequest, "Conversation ID contains control characters")
		}
	}
	// UUIDs may arrive in any spelling (dashed, upper case); stored ids are the 32-hex form.
	if n, err := normalizeUUID(id); err == nil {
		return n, nil
	}
	return id, nil
}

func (a *API) listConversationsV0(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.ConversationListQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := conversation.Filter{SelectedRepository: q.SelectedRepository, IncludeSub: q.IncludeSubConversations}
	if q.ConversationTrigger != nil {
		f.Trigger = string(*q.ConversationTrigger)
	}
	owner := caller(r).ID
	ls, next, err := a.d.Conversations.SearchVersions(r.Context(), owner, f, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	// As writeJSON writes an apitypes.ConversationInfoResultSet.
	return writeListed(a, w, listedConversationInfos, "results", ls, next, func(ls []paging.Listed) ([]conversation.View, error) {
		return a.d.Conversations.At(r.Context(), owner, ls)
	})
}

func (a *API) getConversationV0(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	v, err := a.d.Conversations.Get(r.Context(), caller(r).ID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.conversationInfo(v))
	return nil
}

func (a *API) deleteConversationV0(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	if err := a.d.Conversations.Delete(r.Context(), caller(r).ID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}
