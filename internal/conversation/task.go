package conversation

import (
	"encoding/json"
	"time"
)

// TaskStatus is the step a start task is at.
type TaskStatus string

// Start task steps, as in OpenHands' AppConversationStartTaskStatus.
const (
	TaskWorking              TaskStatus = "WORKING"
	TaskWaitingForSandbox    TaskStatus = "WAITING_FOR_SANDBOX"
	TaskPreparingRepository  TaskStatus = "PREPARING_REPOSITORY"
	TaskRunningSetupScript   TaskStatus = "RUNNING_SETUP_SCRIPT"
	TaskSettingUpGitHooks    TaskStatus = "SETTING_UP_GIT_HOOKS"
	TaskSettingUpSkills      TaskStatus = "SETTING_UP_SKILLS"
	TaskStartingConversation TaskStatus = "STARTING_CONVERSATION"
	TaskReady                TaskStatus = "READY"
	TaskError                TaskStatus = "ERROR"
)

// Terminal reports whether the task has finished (READY or ERROR).
func (s TaskStatus) Terminal() bool { return s == TaskReady || s == TaskError }

// StartTask records the background start of one conversation, saved at every step.
type StartTask struct {
	ID      string
	OwnerID string
	Status  TaskStatus
	Detail  string
	// ConversationID is known from the start; clients see it as app_conversation_id once READY.
	ConversationID string
	SandboxID      string
	AgentServerURL string
	// Request is the V1 start request JSON echoed back to clients, every secret in it
	// masked (apitypes.EchoStartRequest): the values are only in the conversation's sealed
	// request. A stored task's Request is never changed, in place or otherwise: readers may
	// share it.
	Request   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// Rev is the store's version of the row, read with it: the store changes it whenever
	// anything else the task holds changes, through any replica, so that a listed task's ID,
	// CreatedAt and Rev name all it holds (see internal/store/listingcache). It says nothing
	// of the task itself, and is left out of its JSON (which only tests write, to compare
	// tasks).
	Rev int64 `json:"-"`
}

// TaskSort orders start task listings.
type TaskSort string

// Start task sort orders, as in OpenHands.
const (
	SortCreatedAt     TaskSort = "CREATED_AT"
	SortCreatedAtDesc TaskSort = "CREATED_AT_DESC"
	SortUpdatedAt     TaskSort = "UPDATED_AT"
	SortUpdatedAtDesc TaskSort = "UPDATED_AT_DESC"
)

// TaskFilter narrows a start task search. Zero fields do not filter.
type TaskFilter struct {
	ConversationID string
	CreatedGTE     *time.Time
}
