package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/paging"
)

// conversationsPerPage is how many conversations a page of the list shows.
const conversationsPerPage = 20

// convRow is a conversation in the list.
type convRow struct {
	ID, Title, Repository, Branch string
	Status                        conversation.Status
	Execution                     string
	Cost                          float64
	Updated                       time.Time
}

func newConvRow(v conversation.View) convRow {
	c := v.Conversation
	r := convRow{ID: c.ID, Title: c.Title, Status: conversation.StatusOf(v), Updated: c.UpdatedAt}
	if c.SelectedRepository != nil {
		r.Repository = *c.SelectedRepository
	}
	if c.SelectedBranch != nil {
		r.Branch = *c.SelectedBranch
	}
	if r.Status == conversation.StatusRunning {
		r.Execution = c.ExecutionStatus
	}
	r.Cost = metricsOf(c.Metrics).AccumulatedCost
	return r
}

// version tells whether a row shown earlier is still current: its conversation's last
// change, and the status it shows (which its start task can change too).
func (r convRow) version() string {
	return strconv.FormatInt(r.Updated.UnixNano(), 10) + "." + string(r.Status) + "." + r.Execution
}

// metricsOf reads a conversation's stored metrics; zero when there are none.
func metricsOf(raw json.RawMessage) llm.MetricsSnapshot {
	var m llm.MetricsSnapshot
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

type conversationsData struct {
	Query    string
	Rows     []convRow
	NextURL  string
	FirstURL string
	Later    bool
	Live     string
}

func (a *App) conversationsPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	cursor := r.URL.Query().Get("page")
	views, next, err := a.d.Conversations.Search(r.Context(), s.User.ID, conversation.Filter{TitleContains: q},
		paging.Query{Limit: conversationsPerPage, Cursor: cursor})
	if err != nil {
		if isBadCursor(err) {
			http.Redirect(w, r, listURL(q, ""), http.StatusSeeOther)
			return nil
		}
		return err
	}
	d := conversationsData{Query: q, Later: cursor != "", FirstURL: listURL(q, "")}
	ids := make([]string, 0, len(views))
	seen := make([]string, 0, len(views))
	for _, v := range views {
		row := newConvRow(v)
		d.Rows = append(d.Rows, row)
		ids, seen = append(ids, v.ID), append(seen, row.version())
	}
	if next != "" {
		d.NextURL = listURL(q, next)
	}
	if len(ids) > 0 {
		d.Live = "/conversations/rows?ids=" + url.QueryEscape(strings.Join(ids, ",")) +
			"&seen=" + url.QueryEscape(strings.Join(seen, ","))
	}
	a.render(w, r, http.StatusOK, "conversations", s, "Conversations", d)
	return nil
}

func listURL(q, page string) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if page != "" {
		v.Set("page", page)
	}
	if len(v) == 0 {
		return "/conversations"
	}
	return "/conversations?" + v.Encode()
}

// isBadCursor reports whether err is a paging cursor that could not be read (an old link).
func isBadCursor(err error) bool {
	return errors.Is(err, paging.ErrBadCursor)
}

type newConversationData struct {
	Providers []string
	Model     string
}

func (a *App) newConversationPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	d := newConversationData{Model: a.d.DefaultModel}
	hosts, err := a.d.GitProviders.Hosts(r.Context(), s.User.ID)
	if err != nil {
		return err
	}
	for p := range hosts {
		d.Providers = append(d.Providers, p)
	}
	slices.Sort(d.Providers)
	if v, err := a.d.Settings.Get(r.Context(), s.User.ID); err == nil && v.LLMModel != nil && *v.LLMModel != "" {
		d.Model = *v.LLMModel
	}
	if d.Model == "" {
		d.Model = "the model in your settings"
	}
	a.render(w, r, http.StatusOK, "new", s, "New conversation", d)
	return nil
}
