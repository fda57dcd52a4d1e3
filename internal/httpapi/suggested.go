package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/gitprovider"
)

// A suggested task in a creation request, on either generation: the task's repository and
// provider become the conversation's when the request names none, and the first message is
// agentd's task prompt with the issue or pull request read from the provider.

// applySuggestedTask sets the conversation's repository, provider and trigger from the task.
// A task on a repository other than the one the conversation names is refused: the agent's
// provider tools act on the conversation's repository only.
func applySuggestedTask(st *apitypes.SuggestedTaskRequest, cr *conversation.CreateRequest) error {
	if cr.SelectedRepository == nil || strings.TrimSpace(*cr.SelectedRepository) == "" {
		repo := st.Repo
		cr.SelectedRepository = &repo
	} else if !sameRepository(*cr.SelectedRepository, st.Repo) {
		return problem("value_error", "Value error, suggested_task.repo must be the conversation's repository ("+*cr.SelectedRepository+")", "body", "suggested_task", "repo")
	}
	if cr.GitProvider == nil && st.GitProvider != nil {
		cr.GitProvider = (*string)(st.GitProvider)
	}
	if cr.Trigger == nil {
		cr.Trigger = ptr("suggested_task")
	}
	return nil
}

func sameRepository(a, b string) bool {
	ca, errA := gitprovider.CleanRepository(a)
	cb, errB := gitprovider.CleanRepository(b)
	if errA != nil || errB != nil {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	return strings.EqualFold(ca, cb)
}

// suggestedTaskPrompt writes the task's first message, after the repository was checked.
func (a *API) suggestedTaskPrompt(r *http.Request, st *apitypes.SuggestedTaskRequest, cr *conversation.CreateRequest) (string, error) {
	t := conversation.SuggestedTask{Repository: *cr.SelectedRepository, Number: st.IssueNumber, Title: st.Title}
	if cr.GitProvider != nil {
		t.Provider = *cr.GitProvider
	}
	if st.TaskType != nil {
		t.Type = string(*st.TaskType)
	}
	prompt, err := a.d.Conversations.SuggestedTaskPrompt(r.Context(), caller(r).ID, t)
	if errors.Is(err, conversation.ErrUnsupportedTask) {
		return "", problem("value_error", "Value error, "+strings.TrimPrefix(err.Error(), conversation.ErrUnsupportedTask.Error()+": "), "body", "suggested_task")
	}
	return prompt, err
}
