package providertest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NewBitbucket starts a Bitbucket Cloud REST API 2.0 (developer.atlassian.com/cloud/bitbucket)
// under /2.0, in place of https://api.bitbucket.org/2.0. A token is an access token (Bearer)
// or user:app-password (basic credentials).
func NewBitbucket(t Cleaner) *Server {
	return newServer(t, "bitbucket", "/2.0", func(s *Server, mux *http.ServeMux) {
		b := &bbAPI{s}
		p := "/2.0"
		mux.HandleFunc("GET "+p+"/user", b.authed(b.user))
		mux.HandleFunc("GET "+p+"/user/emails", b.authed(b.emails))
		mux.HandleFunc("GET "+p+"/repositories", b.authed(b.repositories))
		mux.HandleFunc("GET "+p+"/user/permissions/workspaces", b.authed(b.workspaces))
		mux.HandleFunc("GET "+p+"/pullrequests/{user}", b.authed(b.userPulls))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}", b.authed(b.repo))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/refs/branches", b.authed(b.branches))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/issues/{id}", b.authed(b.issue))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/issues/{id}/comments", b.authed(b.issueComments))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/pullrequests/{id}", b.authed(b.pull))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/pullrequests/{id}/statuses", b.authed(b.statuses))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/pullrequests/{id}/diffstat", b.authed(b.diffstat))
		mux.HandleFunc("GET "+p+"/repositories/{ws}/{slug}/pullrequests/{id}/comments", b.authed(b.pullComments))
		mux.HandleFunc("POST "+p+"/repositories/{ws}/{slug}/pullrequests", b.authed(b.createPull))
	})
}

type bbAPI struct{ *Server }

func bbError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"message": msg}})
}

func (b *bbAPI) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := b.userOf(r, "")
		if !ok {
			bbError(w, http.StatusUnauthorized, "Token is invalid, expired, or not supported for this endpoint.")
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		h(w, r, u)
	}
}

func bbUUID(u User) string { return fmt.Sprintf("{00000000-0000-0000-0000-%012d}", u.ID) }

func bbUserJSON(login string) map[string]any {
	return map[string]any{"nickname": login, "display_name": login, "type": "user"}
}

func (b *bbAPI) user(w http.ResponseWriter, r *http.Request, u User) {
	writeJSON(w, http.StatusOK, map[string]any{"uuid": bbUUID(u), "account_id": strconv.Itoa(u.ID), "nickname": u.Login,
		"display_name": u.Name, "type": "user", "links": map[string]any{"avatar": map[string]any{"href": "https://avatars.example/" + u.Login}}})
}

func (b *bbAPI) emails(w http.ResponseWriter, r *http.Request, u User) {
	values := []map[string]any{}
	if u.Email != "" {
		values = append(values, map[string]any{"email": u.Email, "is_primary": true, "is_confirmed": true, "type": "email"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"values": values, "pagelen": 10, "page": 1, "size": len(values)})
}

// page answers one page of values in Bitbucket Cloud's shape.
func bbPage[T any](w http.ResponseWriter, r *http.Request, items []T) {
	page, perPage := intParam(r, "page", 1), intParam(r, "pagelen", 10)
	values, more := paginate(items, page, perPage)
	out := map[string]any{"values": values, "page": page, "pagelen": perPage, "size": len(items)}
	if more {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		out["next"] = "https://api.bitbucket.org" + r.URL.Path + "?" + q.Encode()
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *bbAPI) repoJSON(repo *Repo, u User) map[string]any {
	clone := b.cloneURL(repo)
	if cu, err := url.Parse(clone); err == nil && repo.CloneURL == "" {
		cu.User = url.User(u.Login) // Bitbucket names the user in its clone links
		clone = cu.String()
	}
	owner := "user"
	if repo.Organization {
		owner = "team"
	}
	return map[string]any{"uuid": fmt.Sprintf("{repo-%d}", slices.Index(b.repos, repo)), "full_name": repo.FullName,
		"is_private": repo.Private, "mainbranch": map[string]any{"name": repo.DefaultBranch, "type": "branch"},
		"updated_on": repo.PushedAt.UTC().Format(time.RFC3339Nano), "owner": map[string]any{"type": owner},
		"links": map[string]any{"clone": []map[string]any{{"name": "https", "href": clone}, {"name": "ssh", "href": "git@bitbucket.example:" + repo.FullName + ".git"}},
			"html": map[string]any{"href": b.Root() + "/" + repo.FullName}}}
}

func (b *bbAPI) target(w http.ResponseWriter, r *http.Request, u User) *Repo {
	repo := b.visibleRepo(u, r.PathValue("ws")+"/"+r.PathValue("slug"))
	if repo == nil {
		bbError(w, http.StatusNotFound, "Repository "+r.PathValue("ws")+"/"+r.PathValue("slug")+" not found")
	}
	return repo
}

func (b *bbAPI) repo(w http.ResponseWriter, r *http.Request, u User) {
	if repo := b.target(w, r, u); repo != nil {
		writeJSON(w, http.StatusOK, b.repoJSON(repo, u))
	}
}

func (b *bbAPI) repositories(w http.ResponseWriter, r *http.Request, u User) {
	var out []map[string]any
	for _, repo := range b.visibleRepos(u) {
		out = append(out, b.repoJSON(repo, u))
	}
	bbPage(w, r, out)
}

// workspaces lists the user's workspace memberships: their own workspace, and those of the
// private repositories they are a member of.
func (b *bbAPI) workspaces(w http.ResponseWriter, r *http.Request, u User) {
	slugs := []string{u.Login}
	for _, repo := range b.repos {
		ws, _, _ := strings.Cut(repo.FullName, "/")
		if repo.Private && slices.Contains(repo.Members, u.Login) && !slices.Contains(slugs, ws) {
			slugs = append(slugs, ws)
		}
	}
	var out []map[string]any
	for _, ws := range slugs {
		out = append(out, map[string]any{"type": "workspace_membership", "permission": "member",
			"workspace": map[string]any{"type": "workspace", "slug": ws, "name": ws, "uuid": "{" + ws + "}"},
			"user":      map[string]any{"type": "user", "nickname": u.Login}})
	}
	bbPage(w, r, out)
}

func (b *bbAPI) branches(w http.ResponseWriter, r *http.Request, u User) {
	repo := b.target(w, r, u)
	if repo == nil {
		return
	}
	var out []map[string]any
	for i, br := range repo.Branches {
		out = append(out, map[string]any{"name": br, "type": "branch",
			"target": map[string]any{"hash": fmt.Sprintf("%040x", i+1), "date": "2025-01-02T03:04:05+00:00"}})
	}
	bbPage(w, r, out)
}

func (b *bbAPI) id(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		bbError(w, http.StatusNotFound, "Not found")
	}
	return n, err == nil
}

func (b *bbAPI) issue(w http.ResponseWriter, r *http.Request, u User) {
	repo := b.target(w, r, u)
	n, ok := b.id(w, r)
	if repo == nil || !ok {
		return
	}
	i := b.Server.issue(repo.FullName, n)
	if i == nil {
		bbError(w, http.StatusNotFound, "Not found")
		return
	}
	state := "new"
	if i.Closed {
		state = "resolved"
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": i.Number, "title": i.Title, "state": state,
		"content": map[string]any{"raw": i.Body}, "reporter": bbUserJSON(i.Author),
		"links": map[string]any{"html": map[string]any{"href": b.Root() + "/" + i.Repo + "/issues/" + strconv.Itoa(i.Number)}}})
}

func bbComments(cs []Comment) []map[string]any {
	var out []map[string]any
	for _, c := range cs {
		j := map[string]any{"content": map[string]any{"raw": c.Body}, "user": bbUserJSON(c.Author),
			"created_on": "2025-01-02T03:04:05+00:00", "deleted": false}
		if c.Path != "" {
			j["inline"] = map[string]any{"path": c.Path, "to": c.Line}
			if c.Resolved {
				j["resolution"] = map[string]any{"type": "comment_resolution"}
			}
		}
		out = append(out, j)
	}
	return out
}

func (b *bbAPI) issueComments(w http.ResponseWriter, r *http.Request, u User) {
	repo := b.target(w, r, u)
	n, ok := b.id(w, r)
	if repo == nil || !ok {
		return
	}
	i := b.Server.issue(repo.FullName, n)
	if i == nil {
		bbError(w, http.StatusNotFound, "Not found")
		return
	}
	bbPage(w, r, bbComments(i.Comments))
}

func (b *bbAPI) pullJSON(p *PullRequest) map[string]any {
	state := "OPEN"
	if p.Closed {
		state = "DECLINED"
	}
	var participants []map[string]any
	for _, rv := range p.Reviews {
		pt := map[string]any{"user": bbUserJSON(rv.Author), "role": "REVIEWER", "approved": rv.State == "approved", "state": nil}
		switch rv.State {
		case "approved":
			pt["state"] = "approved"
		case "changes_requested":
			pt["state"] = "changes_requested"
		}
		participants = append(participants, pt)
	}
	return map[string]any{"id": p.Number, "title": p.Title, "description": p.Body, "state": state, "draft": p.Draft,
		"author": bbUserJSON(p.Author), "participants": participants,
		"source":      map[string]any{"branch": map[string]any{"name": p.Head}, "commit": map[string]any{"hash": p.HeadSHA}},
		"destination": map[string]any{"branch": map[string]any{"name": p.Base}, "repository": map[string]any{"full_name": p.Repo}},
		"links":       map[string]any{"html": map[string]any{"href": b.Root() + "/" + p.Repo + "/pull-requests/" + strconv.Itoa(p.Number)}}}
}

func (b *bbAPI) userPulls(w http.ResponseWriter, r *http.Request, u User) {
	if r.PathValue("user") != bbUUID(u) && r.PathValue("user") != strconv.Itoa(u.ID) {
		bbPage(w, r, []map[string]any{}) // another user's: none visible here
		return
	}
	var out []map[string]any
	for _, p := range b.pulls {
		if !p.Closed && p.Author == u.Login && b.visibleRepo(u, p.Repo) != nil {
			out = append(out, b.pullJSON(p))
		}
	}
	bbPage(w, r, out)
}

func (b *bbAPI) targetPull(w http.ResponseWriter, r *http.Request, u User) *PullRequest {
	repo := b.target(w, r, u)
	n, ok := b.id(w, r)
	if repo == nil || !ok {
		return nil
	}
	p := b.Server.pull(repo.FullName, n)
	if p == nil {
		bbError(w, http.StatusNotFound, "Not found")
	}
	return p
}

func (b *bbAPI) pull(w http.ResponseWriter, r *http.Request, u User) {
	if p := b.targetPull(w, r, u); p != nil {
		writeJSON(w, http.StatusOK, b.pullJSON(p))
	}
}

func (b *bbAPI) statuses(w http.ResponseWriter, r *http.Request, u User) {
	p := b.targetPull(w, r, u)
	if p == nil {
		return
	}
	var out []map[string]any
	for _, c := range p.Checks {
		state := map[string]string{"success": "SUCCESSFUL", "failure": "FAILED", "pending": "INPROGRESS"}[c.State]
		out = append(out, map[string]any{"key": c.Name, "name": c.Name, "state": state, "url": b.Root() + "/builds/" + c.Name, "type": "build"})
	}
	bbPage(w, r, out)
}

func (b *bbAPI) diffstat(w http.ResponseWriter, r *http.Request, u User) {
	p := b.targetPull(w, r, u)
	if p == nil {
		return
	}
	status := "modified"
	if p.Conflicts {
		status = "merge conflict"
	}
	bbPage(w, r, []map[string]any{{"type": "diffstat", "status": status, "lines_added": 1, "lines_removed": 1}})
}

func (b *bbAPI) pullComments(w http.ResponseWriter, r *http.Request, u User) {
	if p := b.targetPull(w, r, u); p != nil {
		bbPage(w, r, bbComments(p.Comments))
	}
}

func (b *bbAPI) createPull(w http.ResponseWriter, r *http.Request, u User) {
	repo := b.target(w, r, u)
	if repo == nil {
		return
	}
	var in struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Draft       bool   `json:"draft"`
		Source      struct {
			Branch struct {
				Name string `json:"name"`
			} `json:"branch"`
		} `json:"source"`
		Destination struct {
			Branch struct {
				Name string `json:"name"`
			} `json:"branch"`
		} `json:"destination"`
	}
	if err := decode(r, &in); err != nil || in.Title == "" {
		bbError(w, http.StatusBadRequest, "title: This field is required.")
		return
	}
	head, base := in.Source.Branch.Name, in.Destination.Branch.Name
	if base == "" {
		base = repo.DefaultBranch
	}
	if !slices.Contains(repo.Branches, head) {
		bbError(w, http.StatusBadRequest, "source: Branch not found: "+head)
		return
	}
	for _, p := range b.pulls {
		if !p.Closed && strings.EqualFold(p.Repo, repo.FullName) && p.Head == head && p.Base == base {
			bbError(w, http.StatusBadRequest, "There is already an open pull request from "+head+" to "+base)
			return
		}
	}
	p := b.open(PullRequest{Repo: repo.FullName, Title: in.Title, Body: in.Description, Author: u.Login, Head: head, Base: base, Draft: in.Draft})
	writeJSON(w, http.StatusCreated, b.pullJSON(p))
}
