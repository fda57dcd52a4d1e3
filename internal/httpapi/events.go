package httpapi

import (
	"net/http"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// /api/v1/events: the events of all the caller's conversations.

func v1EventFilter(convID *string, kind string, gte, lt *time.Time) event.Filter {
	f := event.Filter{Kind: eventKind(kind), TimestampGTE: gte, TimestampLT: lt}
	if convID != nil {
		// Ids that are not UUIDs (V0 allows them) are matched as given.
		f.ConversationID = idsFromQuery([]string{*convID})[0]
	}
	return f
}

func (a *API) searchEvents(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.EventSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := v1EventFilter(q.ConversationIDEq, q.KindEq, q.TimestampGTE, q.TimestampLT)
	evs, next, err := a.d.Conversations.SearchEvents(r.Context(), caller(r).ID, f, sortDesc(q.SortOrder), paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	writeEventPage(w, evs, next)
	return nil
}

func (a *API) countEvents(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.EventCountQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := v1EventFilter(q.ConversationIDEq, q.KindEq, q.TimestampGTE, q.TimestampLT)
	n, err := a.d.Conversations.CountEvents(r.Context(), caller(r).ID, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (a *API) batchGetEvents(w http.ResponseWriter, r *http.Request) error {
	var q apitypes.IDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	evs, err := a.d.Conversations.GetEvents(r.Context(), caller(r).ID, q.ID)
	if err != nil {
		return err
	}
	out := make([]*apitypes.Event, len(evs))
	for i, e := range evs {
		if e != nil {
			body := apitypes.Event(e.Body)
			out[i] = &body
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// /api/v1/conversation/{conversation_id}/events: the current generation's paths, where the
// conversation is in the path. A conversation the caller does not have has no events here, as
// with conversation_id__eq on the paths above.

func (a *API) searchConversationEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationEventsSearchQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	f := v1EventFilter(&id, q.KindEq, q.TimestampGTE, q.TimestampLT)
	evs, next, err := a.d.Conversations.SearchEvents(r.Context(), caller(r).ID, f, sortDesc(q.SortOrder), paging.Query{Cursor: q.PageID, Limit: q.Limit})
	if err != nil {
		return err
	}
	writeEventPage(w, evs, next)
	return nil
}

func (a *API) countConversationEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	var q apitypes.ConversationEventsCountQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	n, err := a.d.Conversations.CountEvents(r.Context(), caller(r).ID, v1EventFilter(&id, q.KindEq, q.TimestampGTE, q.TimestampLT))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (a *API) batchGetConversationEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	var q apitypes.IDsQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	evs, err := a.d.Conversations.GetEvents(r.Context(), caller(r).ID, q.ID)
	if err != nil {
		return err
	}
	out := make([]*apitypes.Event, len(evs))
	for i, e := range evs {
		// Another conversation's event is not one of this conversation's.
		if e != nil && e.ConversationID == id {
			body := apitypes.Event(e.Body)
			out[i] = &body
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
