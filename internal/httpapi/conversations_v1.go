package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
)

func (a *API) startAppConversation(w http.ResponseWriter, r *http.Request) error {
	cr, err := a.appCreateRequest(r)
	if err != nil {
		return err
	}
	_, task, err := a.d.Conversations.Create(r.Context(), caller(r).ID, cr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.startTask(task))
	return nil
}

// appCreateRequest decodes and checks a V1 start request.
func (a *API) appCreateRequest(r *http.Request) (conversation.CreateRequest, error) {
	var req apitypes.AppConversationStartRequest
	raw, err := decodeBody(r, &req)
	if err != nil {
		return conversation.CreateRequest{}, err
	}
	cr := conversation.CreateRequest{
		Version: conversation.V1, SelectedRepository: req.SelectedRepository,
		SelectedBranch: req.SelectedBranch, GitProvider: (*string)(req.GitProvider),
		Trigger: (*string)(req.Trigger), PRNumbers: req.PRNumber, LLMModel: req.LLMModel,
		Raw: raw,
	}
	if req.Title != nil {
		cr.Title = strings.TrimSpace(*req.Title)
	}
	if req.SandboxID != nil {
		cr.SandboxID = *req.SandboxID
	}
	if req.ConversationID != nil {
		id, err := normalizeUUID(*req.ConversationID)
		if err != nil {
			return conversation.CreateRequest{}, problem("uuid_parsing", "Input should be a valid UUID", "body", "conversation_id")
		}
		cr.ID = id
	}
	cr.Public, cr.Tags = req.Public, req.Tags
	if req.Secrets != nil {
		cr.SecretNames, cr.InlineSecrets = req.Secrets.Stored, req.Secrets.Inline
	}
	if req.ConfirmationPolicy != nil {
		cr.ConfirmationPolicy = ptr(policyOf(*req.ConfirmationPolicy))
	}
	if req.ParentConversationID != nil {
		pid, err := normalizeUUID(*req.ParentConversationID)
		if err != nil {
			return conversation.CreateRequest{}, problem("uuid_parsing", "Input should be a valid UUID", "body", "parent_conversation_id")
		}
		cr.ParentID = &pid
	}
	if m := req.InitialMessage; m != nil {
		if m.Role != nil && *m.Role != "user" {
			return conversation.CreateRequest{}, problem("value_error", "Value error, the initial message must have role user", "body", "initial_message", "role")
		}
		var texts []string
		for _, part := range m.Content {
			switch {
			case part.Text != nil:
				texts = append(texts, part.Text.Text)
			case part.Image != nil:
				cr.ImageURLs = append(cr.ImageURLs, part.Image.ImageURLs...)
			}
		}
		cr.InitialText = strings.Join(texts, "\n")
	}
	if req.SuggestedTask != nil {
		if err := applySuggestedTask(req.SuggestedTask, &cr); err != nil {
			return conversation.CreateRequest{}, err
		}
	}
	if req.PRNumber == nil {
		req.PRNumber = []int{}
	}
	// The task shows the request with its secrets masked; their values are in cr.Raw, which
	// the conversation keeps sealed.
	if cr.TaskRequest, err = apitypes.EchoStartRequest(req); err != nil {
		return conversation.CreateRequest{}, err
	}
	if err := a.checkRepository(r, cr.SelectedRepository, cr.GitProvider, true); err != nil {
		return conversation.CreateRequest{}, err
	}
	if req.SuggestedTask != nil {
		if cr.InitialText, err = a.suggestedTaskPrompt(r, req.SuggestedTask, &cr); err != nil {
			return conversation.CreateRequest{}, err
		}
	}
	return cr, nil
}

// normalizeUUID accepts any UUID spelling (dashes, braces, upper case) and returns the 32-hex
// form used on the wire.
func normalizeUUID(s string) (string, error) {
	s = strings.ToLower(strings.Trim(strings.TrimSpace(s), "{}"))
	s = strings.TrimPrefix(s, "urn:uuid:")
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 32 {
		return "", errors.New("not a UUID")
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", errors.New("not a UUID")
		}
	}
	return s, nil
}

// idsFromQuery normalises UUID ids; an id that is not a UUID can match nothing, so it stays
// as given and its slot answers null.
func idsFromQuery(ids []string) []string {
	out := make([]string, len(ids))
	for i, s := range ids {
		if n, err := normalizeUUID(s); err == nil {
			out[i] = n
		} else {
			out[i] = s
		}
	}
	return out
}

func (a *API) batchGetAppConversations(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.ConversationIDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	views, err := a.d.Conversations.GetMany(r.Context(), caller(r).ID, idsFromQuery(q.IDs))
	if err != nil {
		return err
	}
	out := make([]*apitypes.AppConversation, len(views))
	for i, v := range views {
		if v != nil {
			c := a.appConversation(*v)
			out[i] = &c
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func conversationFilter(title string, cgte, clt, ugte, ult *time.Time) conversation.Filter {
	return conversation.Filter{TitleContains: title, CreatedGTE: cgte, CreatedLT: clt, UpdatedGTE: ugte, UpdatedLT: ult}
}

func (a *API) searchAppConversations(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.AppConversationSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := conversationFilter(q.TitleContains, q.CreatedAtGTE, q.CreatedAtLT, q.UpdatedAtGTE, q.UpdatedAtLT)
	f.IncludeSub, f.SandboxID = q.IncludeSubConversations, q.SandboxIDEq
	owner := caller(r).ID
	ls, next, err := a.d.Conversations.SearchVersions(r.Context(), owner, f, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	return writeListed(a, w, listedAppConversations, "items", ls, next, func(ls []paging.Listed) ([]conversation.View, error) {
		return a.d.Conversations.At(r.Context(), owner, ls)
	})
}

func (a *API) countAppConversations(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.AppConversationCountQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := conversationFilter(q.TitleContains, q.CreatedAtGTE, q.CreatedAtLT, q.UpdatedAtGTE, q.UpdatedAtLT)
	f.IncludeSub, f.SandboxID = q.IncludeSubConversations, q.SandboxIDEq
	n, err := a.d.Conversations.Count(r.Context(), caller(r).ID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (a *API) batchGetStartTasks(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.ConversationIDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	out := make([]*apitypes.AppConversationStartTask, len(q.IDs))
	for i, tid := range idsFromQuery(q.IDs) {
		t, err := a.d.Conversations.GetTask(r.Context(), caller(r).ID, tid)
		if errors.Is(err, conversation.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		st := a.startTask(t)
		out[i] = &st
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func taskFilter(convID *string, gte *time.Time) (conversation.TaskFilter, error) {
	f := conversation.TaskFilter{CreatedGTE: gte}
	if convID != nil {
		id, err := normalizeUUID(*convID)
		if err != nil {
			return f, problem("uuid_parsing", "Input should be a valid UUID", "query", "conversation_id__eq")
		}
		f.ConversationID = id
	}
	return f, nil
}

func (a *API) searchStartTasks(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.StartTaskSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f, err := taskFilter(q.ConversationIDEq, q.CreatedAtGTE)
	if err != nil {
		return err
	}
	sort := conversation.SortCreatedAtDesc
	if q.SortOrder != nil {
		sort = conversation.TaskSort(*q.SortOrder)
	}
	owner := caller(r).ID
	ls, next, err := a.d.Conversations.SearchTaskVersions(r.Context(), owner, f, sort, paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	return writeListed(a, w, listedStartTasks, "items", ls, next, func(ls []paging.Listed) ([]conversation.StartTask, error) {
		return a.d.Conversations.TasksAt(r.Context(), owner, ls)
	})
}

func (a *API) countStartTasks(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.StartTaskCountQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f, err := taskFilter(q.ConversationIDEq, q.CreatedAtGTE)
	if err != nil {
		return err
	}
	n, err := a.d.Conversations.CountTasks(r.Context(), caller(r).ID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}
