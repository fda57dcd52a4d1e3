// Package apitypes holds the JSON wire types of agentd's HTTP API: the current generation
// (/api/v1), the legacy V0 endpoints (/api) and agentd's own additions. Field names and enum
// values follow the OpenHands server so its clients work unchanged. Validation rules that
// belong to a type live on the type (ValidateWire); decoding is done by package wire.
package apitypes

// ProviderType names a git provider.
type ProviderType string

// EnumValues lists the accepted values.
func (ProviderType) EnumValues() []string {
	return []string{"github", "gitlab", "bitbucket", "enterprise_sso"}
}

// SandboxStatus is a sandbox's lifecycle state.
type SandboxStatus string

// EnumValues lists the accepted values.
func (SandboxStatus) EnumValues() []string {
	return []string{"STARTING", "RUNNING", "PAUSED", "ERROR", "MISSING"}
}

// ConversationStatus is a conversation's status in the V0 API.
type ConversationStatus string

// EnumValues lists the accepted values.
func (ConversationStatus) EnumValues() []string {
	return []string{"STARTING", "RUNNING", "STOPPED", "ARCHIVED", "ERROR"}
}

// ConversationTrigger says what started a conversation.
type ConversationTrigger string

// EnumValues lists the accepted values.
func (ConversationTrigger) EnumValues() []string {
	return []string{"resolver", "gui", "suggested_task", "openhands_api", "slack",
		"microagent_management", "jira", "jira_dc", "linear", "bitbucket"}
}

// TaskType is the kind of a suggested task.
type TaskType string

// EnumValues lists the accepted values.
func (TaskType) EnumValues() []string {
	return []string{"MERGE_CONFLICTS", "FAILING_CHECKS", "UNRESOLVED_COMMENTS", "OPEN_ISSUE",
		"OPEN_PR", "CREATE_MICROAGENT"}
}

// StartTaskStatus is the step of a conversation start task.
type StartTaskStatus string

// EnumValues lists the accepted values.
func (StartTaskStatus) EnumValues() []string {
	return []string{"WORKING", "WAITING_FOR_SANDBOX", "PREPARING_REPOSITORY", "RUNNING_SETUP_SCRIPT",
		"SETTING_UP_GIT_HOOKS", "SETTING_UP_SKILLS", "STARTING_CONVERSATION", "READY", "ERROR"}
}

// StartTaskSortOrder orders start task searches.
type StartTaskSortOrder string

// EnumValues lists the accepted values.
func (StartTaskSortOrder) EnumValues() []string {
	return []string{"CREATED_AT", "CREATED_AT_DESC", "UPDATED_AT", "UPDATED_AT_DESC"}
}

// EventSortOrder orders event searches.
type EventSortOrder string

// EnumValues lists the accepted values.
func (EventSortOrder) EnumValues() []string { return []string{"TIMESTAMP", "TIMESTAMP_DESC"} }

// ExecutionStatus is the agent's state in a running conversation.
type ExecutionStatus string

// EnumValues lists the accepted values.
func (ExecutionStatus) EnumValues() []string {
	return []string{"idle", "running", "paused", "waiting_for_confirmation", "finished", "error", "stuck"}
}

// MessageRole is the author role of a message.
type MessageRole string

// EnumValues lists the accepted values.
func (MessageRole) EnumValues() []string { return []string{"user", "system", "assistant", "tool"} }

// AgentType picks the agent preset of a V1 conversation.
type AgentType string

// EnumValues lists the accepted values.
func (AgentType) EnumValues() []string { return []string{"default", "plan"} }
