package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/paging"
)

// microagentConversations lists the conversations that write a microagent for a repository
// (created with create_microagent), in the shape of the V0 conversation list.
func (a *API) microagentConversations(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.MicroagentConversationsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	views, next, err := a.d.Conversations.MicroagentConversations(r.Context(), caller(r).ID, q.SelectedRepository,
		paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	out := apitypes.ConversationInfoResultSet{Results: make([]apitypes.ConversationInfo, len(views)), NextPageID: optString(next)}
	for i, v := range views {
		out.Results[i] = a.conversationInfo(v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
