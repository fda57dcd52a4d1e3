package apitypes

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/wire"
)

// InitSessionRequest is the body of POST /api/conversations.
type InitSessionRequest struct {
	Repository               *string               `json:"repository" wire:"maxlen=300" doc:"Repository to work on, owner/repo."`
	GitProvider              *ProviderType         `json:"git_provider"`
	SelectedBranch           *string               `json:"selected_branch" wire:"maxlen=300"`
	InitialUserMsg           *string               `json:"initial_user_msg"`
	ImageURLs                []string              `json:"image_urls"`
	ReplayJSON               *string               `json:"replay_json" doc:"A recorded trajectory: a JSON list of events, as a string."`
	SuggestedTask            *SuggestedTaskRequest `json:"suggested_task"`
	CreateMicroagent         *CreateMicroagent     `json:"create_microagent"`
	ConversationInstructions *string               `json:"conversation_instructions"`
	MCPConfig                *MCPConfig            `json:"mcp_config"`
	ConversationID           *string               `json:"conversation_id" doc:"Requested id: 1-100 letters, digits, '-' and '_'."`
}

// WireStrict rejects unknown keys.
func (InitSessionRequest) WireStrict() {}

var conversationIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// ValidateWire checks the requested id and the replay's shape.
func (r *InitSessionRequest) ValidateWire(c *wire.Checker) {
	if r.ConversationID != nil && !conversationIDPattern.MatchString(*r.ConversationID) {
		c.ValueError("conversation_id must be 1-100 characters of letters, digits, '-' and '_'", "conversation_id")
	}
	if r.ReplayJSON != nil {
		var events []json.RawMessage
		if err := json.Unmarshal([]byte(*r.ReplayJSON), &events); err != nil {
			c.ValueError("replay_json must be a JSON list of events", "replay_json")
		} else {
			for i, e := range events {
				if len(e) == 0 || e[0] != '{' {
					c.ValueError("replay_json item "+itoa(i)+" must be an event object", "replay_json")
					break
				}
			}
		}
	}
	for i, u := range r.ImageURLs {
		if strings.TrimSpace(u) == "" {
			c.ValueError("image URL cannot be empty", "image_urls", i)
		}
	}
}

// SuggestedTaskRequest asks the agent to work on an issue or pull request of the
// conversation's repository: agentd writes the first message, with the issue's or pull
// request's content read from the provider.
type SuggestedTaskRequest struct {
	GitProvider *ProviderType `json:"git_provider" doc:"The provider of repo; absent: the conversation's git_provider, else the first of the user's providers whose token reaches repo."`
	TaskType    *TaskType     `json:"task_type" doc:"What to do; absent: OPEN_ISSUE. CREATE_MICROAGENT has no task here (see create_microagent)."`
	Repo        string        `json:"repo" wire:"required" doc:"The repository, owner/name; it becomes the conversation's repository when the request names none, and must be it otherwise."`
	IssueNumber int           `json:"issue_number" wire:"required,min=1" doc:"The number of the issue, or of the pull (merge) request."`
	Title       string        `json:"title" wire:"required"`
}

// SuggestedTask is an issue or pull request that needs the user, as GET
// /api/user/suggested-tasks lists them.
type SuggestedTask struct {
	GitProvider ProviderType `json:"git_provider" wire:"required"`
	TaskType    TaskType     `json:"task_type" wire:"required"`
	Repo        string       `json:"repo" wire:"required"`
	IssueNumber int          `json:"issue_number" wire:"required"`
	Title       string       `json:"title" wire:"required"`
}

// CreateMicroagent asks the agent to write a microagent for a repository.
type CreateMicroagent struct {
	Repo        string        `json:"repo" wire:"required"`
	GitProvider *ProviderType `json:"git_provider"`
	Title       *string       `json:"title"`
}

// ConversationResponse answers POST /api/conversations.
type ConversationResponse struct {
	Status             string              `json:"status"`
	ConversationID     string              `json:"conversation_id"`
	Message            *string             `json:"message"`
	ConversationStatus *ConversationStatus `json:"conversation_status"`
}

// ConversationInfo is a conversation in V0 listings.
type ConversationInfo struct {
	ConversationID      string               `json:"conversation_id"`
	Title               string               `json:"title"`
	LastUpdatedAt       time.Time            `json:"last_updated_at"`
	Status              ConversationStatus   `json:"status"`
	RuntimeStatus       *string              `json:"runtime_status"`
	SelectedRepository  *string              `json:"selected_repository"`
	SelectedBranch      *string              `json:"selected_branch"`
	GitProvider         *ProviderType        `json:"git_provider"`
	Trigger             *ConversationTrigger `json:"trigger"`
	NumConnections      int                  `json:"num_connections"`
	URL                 *string              `json:"url"`
	SessionAPIKey       *string              `json:"session_api_key"`
	CreatedAt           time.Time            `json:"created_at"`
	PRNumber            []int                `json:"pr_number"`
	ConversationVersion string               `json:"conversation_version"`
	SubConversationIDs  []string             `json:"sub_conversation_ids"`
	WaitingForNode      *string              `json:"waiting_for_node" doc:"agentd addition: the node hosting the conversation's sandbox while no replica of agentd runs there, so that nothing can run the conversation until one starts there again; null otherwise."`
}

// ConversationInfoResultSet is a page of V0 conversations.
type ConversationInfoResultSet struct {
	Results    []ConversationInfo `json:"results"`
	NextPageID *string            `json:"next_page_id"`
}

// ConversationListQuery is the query of GET /api/conversations.
type ConversationListQuery struct {
	PageID                  string               `query:"page_id"`
	Limit                   int                  `query:"limit" wire:"min=1,max=100,default=20"`
	SelectedRepository      string               `query:"selected_repository"`
	ConversationTrigger     *ConversationTrigger `query:"conversation_trigger"`
	IncludeSubConversations bool                 `query:"include_sub_conversations"`
}

// ConversationUpdateRequest is the body of PATCH /api/conversations/{id}: the web app's
// rename.
type ConversationUpdateRequest struct {
	Title string `json:"title" wire:"required,minlen=1,maxlen=200"`
}

// WireStrict rejects unknown fields, as OpenHands does.
func (ConversationUpdateRequest) WireStrict() {}

// ProviderToken is one git provider token sent by a client.
type ProviderToken struct {
	Token  *string `json:"token" wire:"secret"`
	Host   *string `json:"host"`
	UserID *string `json:"user_id"`
}

// POSTProviderModel is the body of POST /api/add-git-providers.
type POSTProviderModel struct {
	MCPConfig      *MCPConfig                     `json:"mcp_config"`
	ProviderTokens map[ProviderType]ProviderToken `json:"provider_tokens"`
}

// MessageResponse is a plain acknowledgement.
type MessageResponse struct {
	Message string `json:"message"`
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
