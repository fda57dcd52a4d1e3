package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// tracedQuery is a query a store ran, with its arguments.
type tracedQuery struct {
	text string
	args []any
}

// TestListingQueryPlans runs every listing and search with each of its filters and sorts and
// asks SQLite how it runs their queries (EXPLAIN QUERY PLAN): every table is reached through
// an index, and no page is sorted in a temporary B-tree. A page's cost then grows with the
// page, not with the table (a title or body search still reads the owner's rows in order
// until the page is full).
func TestListingQueryPlans(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var last tracedQuery
	s, err := OpenWith(ctx, filepath.Join(t.TempDir(), "agentd.db"), Options{trace: func(q string, args []driver.NamedValue) {
		mu.Lock()
		defer mu.Unlock()
		last = tracedQuery{text: q}
		for _, a := range args {
			last.args = append(last.args, a.Value)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// ANALYZE-free plans: what a new database gets, which is what most have.
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	cursor := paging.Query{Limit: 100, Cursor: encodeCursor(nanos(day), "some-id")}
	first := paging.Query{Limit: 100}
	type planCase struct {
		name string
		run  func() error
		// index, when set, is the index the plan must use.
		index string
	}
	var cases []planCase
	add := func(name string, run func() error, index ...string) {
		cases = append(cases, planCase{name: name, run: run, index: strings.Join(index, "")})
	}
	convFilters := map[string]struct {
		f     conversation.Filter
		index string
	}{
		// The versions of the page from the owner's index alone (the listing cache).
		"none":          {conversation.Filter{}, "COVERING INDEX conversations_owner_created"},
		"title":         {conversation.Filter{TitleContains: "fix"}, "conversations_owner_created"},
		"created range": {conversation.Filter{CreatedGTE: &day, CreatedLT: &day}, "COVERING INDEX conversations_owner_created"},
		"updated range": {conversation.Filter{UpdatedGTE: &day, UpdatedLT: &day}, "conversations_owner_created"},
		"repository":    {conversation.Filter{SelectedRepository: "octo/widgets"}, "conversations_owner_repository"},
		"trigger":       {conversation.Filter{Trigger: "resolver"}, "conversations_owner_trigger"},
		"sandbox":       {conversation.Filter{SandboxID: "sb1"}, "conversations_owner_sandbox"},
		"with subs":     {conversation.Filter{IncludeSub: true}, "COVERING INDEX conversations_owner_created"},
	}
	for name, f := range convFilters {
		for qname, q := range map[string]paging.Query{"first page": first, "next page": cursor} {
			add("conversations, "+name+", "+qname, func() error {
				_, _, err := s.ListConversations(ctx, "owner", f.f, q)
				return err
			}, f.index)
		}
	}
	add("sub-conversations of a page", func() error {
		_, err := s.SubConversationIDs(ctx, "owner", []string{"c1", "c2"})
		return err
	}, "conversations_parent")
	add("the watcher's sandboxes", func() error {
		_, err := s.LiveSandboxes(ctx)
		return err
	}, "sandboxes_live")
	for _, sort := range []conversation.TaskSort{conversation.SortCreatedAt, conversation.SortCreatedAtDesc, conversation.SortUpdatedAt, conversation.SortUpdatedAtDesc} {
		for fname, f := range map[string]conversation.TaskFilter{"none": {}, "conversation": {ConversationID: "c1"}, "created after": {CreatedGTE: &day}} {
			for qname, q := range map[string]paging.Query{"first page": first, "next page": cursor} {
				index := "start_tasks_owner_created"
				switch {
				case fname == "conversation":
					index = "start_tasks_conversation"
				case sort == conversation.SortUpdatedAt || sort == conversation.SortUpdatedAtDesc:
					index = "start_tasks_owner_updated"
				}
				add(fmt.Sprintf("start tasks, %s, %s, %s", sort, fname, qname), func() error {
					_, _, err := s.ListStartTasks(ctx, "owner", f, sort, q)
					return err
				}, index)
			}
		}
	}
	for qname, q := range map[string]paging.Query{"first page": first, "next page": cursor} {
		add("sandboxes, "+qname, func() error {
			_, _, err := s.ListSandboxes(ctx, "owner", q)
			return err
		}, "sandboxes_owner_created")
	}
	evCursor := paging.Query{Limit: 100, Cursor: encodeCursor(42, "e1")}
	for fname, f := range map[string]event.Filter{
		"conversation": {ConversationID: "c1"}, "conversation and kind": {ConversationID: "c1", Kind: "MessageEvent"},
		"conversation and source": {ConversationID: "c1", Source: "agent"}, "conversation and time": {ConversationID: "c1", TimestampGTE: &day, TimestampLT: &day},
		"conversation and body": {ConversationID: "c1", Body: "fix"}, "every conversation": {}, "every conversation's kind": {Kind: "MessageEvent"},
	} {
		for _, desc := range []bool{false, true} {
			for qname, q := range map[string]paging.Query{"first page": first, "next page": evCursor} {
				index := "events_conversation_seq"
				if f.ConversationID == "" {
					index = "events_owner_seq"
				}
				add(fmt.Sprintf("events, %s, desc %v, %s", fname, desc, qname), func() error {
					_, _, err := s.SearchEvents(ctx, "owner", f, desc, q)
					return err
				}, index)
			}
		}
	}
	// The events of a listed page that the event cache does not hold: a lookup by rowid each.
	add("events by their sequence numbers", func() error {
		_, err := at(ctx, s, listedEvents, []listingcache.Version[int64]{{Key: 7}, {Key: 8}, {Key: 9}})
		return err
	}, "INTEGER PRIMARY KEY")
	// The start tasks of a listed page that the cache does not hold: a lookup by id each.
	add("start tasks by their ids", func() error {
		_, err := at(ctx, s, listedTasks, []listingcache.Version[string]{{Key: "t1"}, {Key: "t2"}})
		return err
	}, "sqlite_autoindex_start_tasks_1")
	add("conversations by their ids", func() error {
		_, err := at(ctx, s, listedConversations, []listingcache.Version[string]{{Key: "c1"}, {Key: "c2"}})
		return err
	}, "sqlite_autoindex_conversations_1")
	add("events by their ids", func() error {
		_, err := s.GetEvents(ctx, "owner", []string{"e1", "e2"})
		return err
	}, "sqlite_autoindex_events_1")
	add("sandboxes by their ids", func() error {
		_, err := at(ctx, s, listedSandboxes, []listingcache.Version[string]{{Key: "sb1"}, {Key: "sb2"}})
		return err
	}, "sqlite_autoindex_sandboxes_1")

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			q := last
			mu.Unlock()
			plan, err := s.queryPlan(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			// The first step that reads the listed table; a check made once before it (EXISTS,
			// on another table) comes first in the plan.
			start := plan[0]
			if len(plan) > 1 && strings.Contains(start, " EXISTS ") {
				start = plan[1]
			}
			if tc.index != "" && !strings.Contains(start, " "+tc.index+" ") {
				t.Errorf("the plan does not start with the index %s:\n%s\n%s", tc.index, q.text, strings.Join(plan, "\n"))
			}
			for _, line := range plan {
				if tc.index == "start_tasks_conversation" && strings.Contains(line, "TEMP B-TREE") {
					continue // one conversation's few tasks, sorted by their update time
				}
				if bad := badPlan(line); bad != "" {
					t.Errorf("%s\nin the plan of\n%s\n%s", bad, q.text, strings.Join(plan, "\n"))
				}
			}
		})
	}
}

// badPlan says what is wrong with a line of a query plan, or "".
func badPlan(line string) string {
	switch {
	case strings.Contains(line, "TEMP B-TREE"):
		return "a sort in a temporary B-tree: " + line
	case strings.HasPrefix(line, "SCAN json_each VIRTUAL TABLE"):
		return "" // the values of a bound JSON array
	case strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, " INDEX "):
		return "a table read whole: " + line
	case strings.HasPrefix(line, "SCAN ") && strings.Contains(line, " INDEX ") && !strings.Contains(line, "("):
		// A scan of a whole index is a table read in order; only the events of every
		// conversation, which join from the owner's conversations, may do it.
		return "a whole index read: " + line
	}
	return ""
}

// queryPlan is SQLite's plan of q: one line per step, innermost last.
func (s *Store) queryPlan(ctx context.Context, q tracedQuery) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.text, q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}
