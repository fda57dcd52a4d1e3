package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/tool"
)

// The agent server's POST /api/conversations, which OpenHands' SDK calls to start a
// conversation in a sandbox it holds (RemoteConversation, the cloud workspace's): agentd
// starts one of its own conversations in that sandbox, as POST /api/v1/app-conversations
// with its sandbox_id does, and answers once it is ready, as the conversation API shows it.

// errStartFailed: the conversation's start task ended in ERROR; its detail says why.
func errStartFailed(detail string) error {
	return errStatus(http.StatusServiceUnavailable, "The conversation could not start in this sandbox: "+detail)
}

func (a *API) startAgentServerConversation(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.AgentStartConversationRequest
	raw, err := decodeBody(r, &req)
	if err != nil {
		return err
	}
	sandboxID, owner := r.PathValue("sandbox_id"), caller(r).ID
	cr, err := agentCreateRequest(req, sandboxID)
	if err != nil {
		return err
	}
	cr.Raw = raw
	ctx := r.Context()
	if cr.ID != "" {
		// Posting an id again attaches to the conversation, as an agent server does.
		v, err := a.d.Conversations.Get(ctx, owner, cr.ID)
		switch {
		case err == nil && v.SandboxID == sandboxID:
			writeJSON(w, http.StatusOK, a.agentConversationInfo(ctx, owner, v))
			return nil
		case err == nil:
			return conversation.ErrExists
		case !errors.Is(err, conversation.ErrNotFound):
			return err
		}
	}
	task, watch, err := a.d.Conversations.CreateWatched(ctx, owner, cr)
	if err != nil {
		return err
	}
	defer watch.Stop()
	for task.Status != conversation.TaskReady && task.Status != conversation.TaskError {
		select {
		case t, ok := <-watch.C:
			if !ok {
				// The task's goroutine ended (or runs on another replica): its last state
				// is the store's.
				if task, err = a.d.Conversations.GetTask(ctx, owner, task.ID); err != nil {
					return err
				}
				if task.Status != conversation.TaskReady && task.Status != conversation.TaskError {
					return errStartFailed("its start was left unfinished; GET /api/v1/app-conversations/start-tasks?ids=" + task.ID + " follows it")
				}
				continue
			}
			task = t
		case <-ctx.Done():
			return ctx.Err()
		case <-a.sockets.ctx.Done():
			return errStatus(http.StatusServiceUnavailable, "The server is shutting down; the conversation's start goes on after it restarts")
		}
	}
	if task.Status == conversation.TaskError {
		return errStartFailed(task.Detail)
	}
	v, err := a.d.Conversations.Get(ctx, owner, task.ConversationID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, a.agentConversationInfo(ctx, owner, v))
	return nil
}

// agentCreateRequest maps a start request onto a conversation's start in the sandbox,
// refusing what agentd cannot honour (each problem says where and why).
func agentCreateRequest(req apitypes.AgentStartConversationRequest, sandboxID string) (conversation.CreateRequest, error) {
	refuse := func(msg string, loc ...any) error {
		return problem("value_error", "Value error, "+msg, append([]any{"body"}, loc...)...)
	}
	switch {
	case req.Agent == nil:
		return conversation.CreateRequest{}, problem("missing", "Field required: agentd takes the agent itself (not agent_settings or agent_profile_id)", "body", "agent")
	case !apitypes.EmptyJSON(req.AgentSettings):
		return conversation.CreateRequest{}, refuse("agentd takes the agent itself: send agent, without agent_settings", "agent_settings")
	case req.AgentProfileID != nil:
		return conversation.CreateRequest{}, refuse("agentd keeps no agent profiles: send agent", "agent_profile_id")
	case req.Agent.Kind != nil && *req.Agent.Kind != "Agent":
		return conversation.CreateRequest{}, refuse("agentd runs only its own Agent", "agent", "kind")
	case !emptyMCPConfig(req.Agent.MCPConfig):
		return conversation.CreateRequest{}, refuse("the agent gets the MCP servers of your settings (POST /api/settings): send none here", "agent", "mcp_config")
	case !apitypes.EmptyJSON(req.SecurityAnalyzer):
		return conversation.CreateRequest{}, refuse("agentd runs no security analyzer: send null", "security_analyzer")
	case req.SecretsEncrypted:
		return conversation.CreateRequest{}, refuse("agentd takes secret values in plain text only", "secrets_encrypted")
	case req.Worktree:
		return conversation.CreateRequest{}, refuse("agentd makes no git worktrees", "worktree")
	case !apitypes.EmptyJSON(req.ClientTools):
		return conversation.CreateRequest{}, refuse("agentd runs no client tools", "client_tools")
	case !apitypes.EmptyJSON(req.Plugins):
		return conversation.CreateRequest{}, refuse("agentd loads no plugins", "plugins")
	case !apitypes.EmptyJSON(req.HookConfig):
		return conversation.CreateRequest{}, refuse("agentd runs no hooks", "hook_config")
	}
	var names []string
	for _, t := range tool.Builtin() {
		names = append(names, t.Name)
	}
	for i, t := range req.Agent.Tools {
		if !slices.Contains(names, t.Name) {
			return conversation.CreateRequest{}, refuse("agentd has no tool "+t.Name+"; its agent's tools are "+strings.Join(names, ", "), "agent", "tools", i, "name")
		}
	}
	model := req.Agent.LLM.Model
	cr := conversation.CreateRequest{
		Version: conversation.V1, SandboxID: sandboxID, LLMModel: &model,
		LLMAPIKey: req.Agent.LLM.APIKey, LLMBaseURL: req.Agent.LLM.BaseURL, Tags: req.Tags,
	}
	if req.ConversationID != nil {
		id, err := normalizeUUID(*req.ConversationID)
		if err != nil {
			return conversation.CreateRequest{}, problem("uuid_parsing", "Input should be a valid UUID", "body", "conversation_id")
		}
		cr.ID = id
	}
	if req.ParentConversationID != nil {
		id, err := normalizeUUID(*req.ParentConversationID)
		if err != nil {
			return conversation.CreateRequest{}, problem("uuid_parsing", "Input should be a valid UUID", "body", "parent_conversation_id")
		}
		cr.ParentID = &id
	}
	if req.ConfirmationPolicy != nil {
		cr.ConfirmationPolicy = ptr(policyOf(*req.ConfirmationPolicy))
	}
	if req.Secrets != nil {
		cr.InlineSecrets, cr.LookupSecrets = req.Secrets.Inline, req.Secrets.Lookups
	}
	if m := req.InitialMessage; m != nil {
		if m.Role != nil && *m.Role != "user" {
			return conversation.CreateRequest{}, refuse("the initial message must have role user", "initial_message", "role")
		}
		msg := messageOf(m.Content)
		cr.InitialText, cr.ImageURLs = msg.Text, msg.ImageURLs
	}
	// The start task echoes the request as a V1 start in the sandbox, without the agent.
	echo := apitypes.AppConversationStartRequest{SandboxID: &sandboxID, InitialMessage: req.InitialMessage,
		ConversationID: req.ConversationID, ParentConversationID: req.ParentConversationID, LLMModel: &model, Tags: req.Tags, PRNumber: []int{}}
	var err error
	if cr.TaskRequest, err = json.Marshal(echo); err != nil {
		return conversation.CreateRequest{}, err
	}
	return cr, nil
}

// emptyMCPConfig reports whether an agent's mcp_config names no server.
func emptyMCPConfig(raw json.RawMessage) bool {
	if apitypes.EmptyJSON(raw) {
		return true
	}
	var cfg struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(raw, &all) != nil || json.Unmarshal(raw, &cfg) != nil {
		return false
	}
	return len(cfg.MCPServers) == 0 && len(all) <= 1
}
