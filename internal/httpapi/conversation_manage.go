package httpapi

import (
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
)

// PATCH and DELETE of a current-generation conversation.

// appConversationID is the conversation id of a V1 path: a UUID in any spelling, as OpenHands
// requires (400 otherwise).
func appConversationID(r *http.Request) (string, error) {
	id, err := normalizeUUID(r.PathValue("conversation_id"))
	if err != nil {
		return "", errStatus(http.StatusBadRequest, "Invalid conversation ID format")
	}
	return id, nil
}

func (a *API) updateAppConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := appConversationID(r)
	if err != nil {
		return err
	}
	var req apitypes.AppConversationUpdateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	p := conversation.Patch{Public: req.Public, SelectedRepository: req.SelectedRepository,
		SelectedBranch: req.SelectedBranch, GitProvider: (*string)(req.GitProvider)}
	if req.Title != nil {
		title := strings.TrimSpace(*req.Title)
		if title == "" {
			return problem("value_error", "Value error, the title must not be blank", "body", "title")
		}
		p.Title = &title
	}
	v, err := a.d.Conversations.Patch(r.Context(), caller(r).ID, id, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.appConversation(v))
	return nil
}

// renameConversationV0 is the web app's rename, for conversations of either generation.
func (a *API) renameConversationV0(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	var req apitypes.ConversationUpdateRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	title := strings.TrimSpace(req.Title)
	if title == "" {
		return problem("value_error", "Value error, the title must not be blank", "body", "title")
	}
	if _, err := a.d.Conversations.Patch(r.Context(), caller(r).ID, id, conversation.Patch{Title: &title}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

func (a *API) deleteAppConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := appConversationID(r)
	if err != nil {
		return err
	}
	if err := a.d.Conversations.Delete(r.Context(), caller(r).ID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}
