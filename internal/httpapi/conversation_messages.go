package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/sandbox"
)

// Messages sent to a conversation through the app server rather than its conversation API:
// send-message for a conversation that runs, pending messages for one that still starts.

func (a *API) sendAppMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := appConversationID(r)
	if err != nil {
		return err
	}
	var req apitypes.AppSendMessageRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Role != nil && *req.Role != "user" {
		return errNotUserRole
	}
	v, err := a.d.Conversations.Get(r.Context(), caller(r).ID, id)
	if err != nil {
		return err
	}
	if err := sendable(v); err != nil {
		return err
	}
	run := req.Run == nil || *req.Run
	if err := a.d.Conversations.SendMessage(r.Context(), caller(r).ID, id, messageOf(req.Content), run); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.AppSendMessageResponse{Success: true, SandboxStatus: apitypes.SandboxStatus(v.SandboxStatus)})
	return nil
}

// sendable applies OpenHands' rules for send-message: the sandbox must run (409 otherwise,
// resume it first); a sandbox that is gone archived the conversation (410); one that failed
// cannot take messages (503). A conversation still starting is a 409 too: its pending
// messages are the way to write to it.
func sendable(v conversation.View) error {
	switch {
	case v.TaskStatus == conversation.TaskError:
		return errStatus(http.StatusServiceUnavailable, "The conversation failed to start and cannot accept messages.")
	case v.TaskStatus != "" && v.TaskStatus != conversation.TaskReady:
		return errStatus(http.StatusConflict, "The conversation is still starting. Queue the message with POST /api/v1/conversations/{conversation_id}/pending-messages.")
	case v.SandboxStatus == sandbox.StatusMissing:
		return errStatus(http.StatusGone, "Conversation is archived. The sandbox no longer exists.")
	case v.SandboxStatus == sandbox.StatusError:
		return errStatus(http.StatusServiceUnavailable, "Sandbox is in an error state and cannot accept messages.")
	case v.SandboxStatus != sandbox.StatusRunning:
		return errStatus(http.StatusConflict, "Sandbox is "+string(v.SandboxStatus)+". Use POST /api/v1/sandboxes/"+v.SandboxID+"/resume to resume it first.")
	}
	return nil
}

func (a *API) queuePendingMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pendingConversationID(r)
	if err != nil {
		return err
	}
	var req apitypes.PendingMessageRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Role != nil && *req.Role != "user" {
		return errNotUserRole
	}
	mid, pos, err := a.d.Conversations.QueueMessage(r.Context(), caller(r).ID, id, messageOf(req.Content))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apitypes.PendingMessageResponse{ID: mid, Queued: pos > 0, Position: pos})
	return nil
}

// pendingConversationID reads the conversation of a pending message: its id, or, as OpenHands'
// web app sends before the conversation is known, its start task's id, bare or as
// "task-<id>".
func (a *API) pendingConversationID(r *http.Request) (string, error) {
	raw := strings.TrimPrefix(r.PathValue("conversation_id"), "task-")
	id, err := normalizeUUID(raw)
	if err != nil {
		return "", errStatus(http.StatusBadRequest, "Invalid conversation ID format")
	}
	_, err = a.d.Conversations.Get(r.Context(), caller(r).ID, id)
	if !errors.Is(err, conversation.ErrNotFound) {
		return id, err
	}
	t, err := a.d.Conversations.GetTask(r.Context(), caller(r).ID, id)
	if err != nil {
		return "", err
	}
	return t.ConversationID, nil
}
