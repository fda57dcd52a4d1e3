package web

import (
	"net/http"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
)

// maxListed bounds the sandboxes, specs, keys and secrets a settings page lists.
const maxListed = 500

type sandboxRow struct {
	sandbox.Sandbox
	Conversations []convRow
}

type sandboxesData struct {
	Sandboxes []sandboxRow
	More      bool
	Specs     []sandbox.Spec
	Default   string
}

func (a *App) sandboxesPage(w http.ResponseWriter, r *http.Request, s *signedIn) error {
	ctx := r.Context()
	var d sandboxesData
	sbs, more, err := collectPages(maxListed, func(q paging.Query) ([]sandbox.Sandbox, string, error) {
		return a.d.Sandboxes.Search(ctx, s.User.ID, q)
	})
	if err != nil {
		return err
	}
	d.More = more
	for _, sb := range sbs {
		row := sandboxRow{Sandbox: sb}
		convs, _, err := a.d.Conversations.Search(ctx, s.User.ID, conversation.Filter{SandboxID: sb.ID, IncludeSub: true}, paging.Query{Limit: 5})
		if err != nil {
			return err
		}
		for _, v := range convs {
			row.Conversations = append(row.Conversations, newConvRow(v))
		}
		d.Sandboxes = append(d.Sandboxes, row)
	}
	if d.Specs, _, err = collectPages(maxListed, func(q paging.Query) ([]sandbox.Spec, string, error) {
		return a.d.Sandboxes.ListSpecs(ctx, q)
	}); err != nil {
		return err
	}
	a.render(w, r, http.StatusOK, "sandboxes", s, "Sandboxes", d)
	return nil
}

// collectPages reads pages until there are no more or it has n items; more says whether
// some were left.
func collectPages[T any](n int, page func(paging.Query) ([]T, string, error)) ([]T, bool, error) {
	var out []T
	cursor := ""
	for {
		items, next, err := page(paging.Query{Limit: paging.MaxLimit, Cursor: cursor})
		if err != nil {
			return nil, false, err
		}
		out = append(out, items...)
		if next == "" {
			return out, false, nil
		}
		if len(out) >= n {
			return out[:n], true, nil
		}
		cursor = next
	}
}
