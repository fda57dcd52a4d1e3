package apitypes

import "encoding/json"

// AgentStartConversationRequest is the body of an agent server's POST /api/conversations
// (OpenHands' StartConversationRequest) as OpenHands' SDK sends it: RemoteConversation dumps
// its whole agent, LLM and all. agentd runs its own agent in the sandbox, so of the agent it
// takes the model and checks the rest against what it runs; the fields that would ask for
// what it cannot do are refused when set, and the others are accepted and not used.
type AgentStartConversationRequest struct {
	Agent                *AgentStartSpec     `json:"agent" wire:"nullable" doc:"The agent: its llm and tools are read (see AgentStartSpec); required, as agentd takes neither agent_settings nor agent_profile_id."`
	AgentSettings        json.RawMessage     `json:"agent_settings" doc:"Refused when set: send agent."`
	AgentProfileID       *string             `json:"agent_profile_id" wire:"nullable" doc:"Refused when set: agentd keeps no agent profiles."`
	Workspace            AgentWorkspaceSpec  `json:"workspace" wire:"required"`
	ConversationID       *string             `json:"conversation_id" wire:"nullable" doc:"A UUID; one of the caller's conversations in this sandbox is answered as it is (200)."`
	InitialMessage       *SendMessageRequest `json:"initial_message" wire:"nullable" doc:"The first user message; the agent answers it at once."`
	MaxIterations        *int                `json:"max_iterations" wire:"nullable,min=1" doc:"Accepted; the server's bound holds (the answer's max_iterations)."`
	StuckDetection       *bool               `json:"stuck_detection" wire:"nullable" doc:"Accepted; the server's setting holds (the answer's stuck_detection)."`
	ConfirmationPolicy   *ConfirmationPolicy `json:"confirmation_policy" wire:"nullable"`
	SecurityAnalyzer     json.RawMessage     `json:"security_analyzer" doc:"Refused when set: agentd runs no security analyzer."`
	Secrets              *SecretSources      `json:"secrets" wire:"nullable" doc:"As POST …/api/conversations/{id}/secrets takes them."`
	SecretsEncrypted     bool                `json:"secrets_encrypted" doc:"Refused when true: agentd takes secret values in plain text only."`
	Worktree             bool                `json:"worktree" doc:"Refused when true: agentd makes no git worktrees."`
	ParentConversationID *string             `json:"parent_conversation_id" wire:"nullable" doc:"A UUID of one of the caller's conversations."`
	Tags                 Tags                `json:"tags" wire:"nullable,maxlen=50"`
	ToolModuleQualnames  json.RawMessage     `json:"tool_module_qualnames" doc:"Accepted and ignored: agentd's tools are its own, not Python modules."`
	AgentDefinitions     json.RawMessage     `json:"agent_definitions" doc:"Accepted and ignored: agentd's agent starts no sub-agents of its own."`
	ClientTools          json.RawMessage     `json:"client_tools" doc:"Refused when not empty: agentd runs no client tools."`
	Plugins              json.RawMessage     `json:"plugins" doc:"Refused when not empty: agentd loads no plugins."`
	HookConfig           json.RawMessage     `json:"hook_config" doc:"Refused when set: agentd runs no hooks."`
	Autotitle            *bool               `json:"autotitle" wire:"nullable" doc:"Accepted; the server's title setting holds."`
}

// AgentStartSpec is what agentd reads of the agent a start request sends.
type AgentStartSpec struct {
	Kind      *string          `json:"kind" wire:"nullable" doc:"Agent (the default); ACPAgent is refused."`
	LLM       AgentStartLLM    `json:"llm" wire:"required"`
	Tools     []AgentStartTool `json:"tools" wire:"nullable" doc:"Each must be one of agentd's tools (terminal, file_editor, task_tracker, think, finish); the agent gets all of them."`
	MCPConfig json.RawMessage  `json:"mcp_config" doc:"Refused when it names servers: the agent gets the MCP servers of the owner's settings."`
}

// AgentStartLLM is what agentd reads of the agent's LLM: the model it runs, and the key and
// base URL it checks against the owner's LLM settings, with which the agent runs.
type AgentStartLLM struct {
	Model   string  `json:"model" wire:"required,maxlen=500"`
	APIKey  *string `json:"api_key" wire:"nullable,secret" doc:"Null, or the API key of the owner's LLM settings (never shown)."`
	BaseURL *string `json:"base_url" wire:"nullable" doc:"Null, or the base URL of the owner's LLM settings."`
}

// AgentStartTool names a tool of the agent; its params are accepted and not used.
type AgentStartTool struct {
	Name string `json:"name" wire:"required"`
}

// AgentWorkspaceSpec is the workspace a start request names (a LocalWorkspace).
type AgentWorkspaceSpec struct {
	WorkingDir string `json:"working_dir" wire:"required" doc:"Accepted; the agent works where agentd's conversations in the sandbox work (the answer's workspace.working_dir)."`
}

// EmptyJSON reports whether an accepted-but-unused field was left out, null, or empty.
func EmptyJSON(raw json.RawMessage) bool {
	switch string(raw) {
	case "", "null", "{}", "[]", "false":
		return true
	}
	return false
}
