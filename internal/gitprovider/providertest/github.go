package providertest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NewGitHub starts a GitHub REST API (docs.github.com/rest) as GitHub Enterprise Server
// serves it, under /api/v3: APIURL() is what the server's configuration names in place of
// https://api.github.com, Root() what a user gives as an Enterprise host.
func NewGitHub(t Cleaner) *Server {
	return newServer(t, "github", "/api/v3", func(s *Server, mux *http.ServeMux) {
		g := &ghAPI{s}
		p := "/api/v3"
		mux.HandleFunc("GET "+p+"/meta", g.meta)
		mux.HandleFunc("GET "+p+"/user", g.authed(g.user))
		mux.HandleFunc("GET "+p+"/user/emails", g.authed(g.emails))
		mux.HandleFunc("GET "+p+"/user/repos", g.authed(g.userRepos))
		mux.HandleFunc("GET "+p+"/user/installations", g.authed(g.installations))
		mux.HandleFunc("GET "+p+"/issues", g.authed(g.assignedIssues))
		mux.HandleFunc("GET "+p+"/search/issues", g.authed(g.searchIssues))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}", g.authed(g.repo))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/branches", g.authed(g.branches))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/issues/{number}", g.authed(g.issue))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/issues/{number}/comments", g.authed(g.issueComments))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/pulls/{number}", g.authed(g.pull))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/pulls/{number}/reviews", g.authed(g.reviews))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/pulls/{number}/comments", g.authed(g.reviewComments))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/commits/{sha}/check-runs", g.authed(g.checkRuns))
		mux.HandleFunc("GET "+p+"/repos/{owner}/{name}/commits/{sha}/status", g.authed(g.combinedStatus))
		mux.HandleFunc("POST "+p+"/repos/{owner}/{name}/pulls", g.authed(g.createPull))
	})
}

type ghAPI struct{ *Server }

func ghError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// authed demands a known token; the handler runs with s.mu held.
func (g *ghAPI) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := g.userOf(r, "")
		if !ok {
			ghError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		h(w, r, u)
	}
}

func (g *ghAPI) meta(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"verifiable_password_authentication": true, "installed_version": "3.14.0"})
}

func ghUserJSON(u User) map[string]any {
	return map[string]any{"login": u.Login, "id": u.ID, "name": u.Name, "type": "User",
		"avatar_url": "https://avatars.example/" + u.Login, "email": nil, "company": optional(u.Company)}
}

func (g *ghAPI) user(w http.ResponseWriter, r *http.Request, u User) {
	// The address is private, as by default: /user/emails tells it.
	writeJSON(w, http.StatusOK, ghUserJSON(u))
}

func (g *ghAPI) emails(w http.ResponseWriter, r *http.Request, u User) {
	out := []map[string]any{}
	if u.Email != "" {
		out = append(out, map[string]any{"email": u.Email, "primary": true, "verified": true, "visibility": "private"})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *ghAPI) repoJSON(r *Repo) map[string]any {
	owner, name, _ := strings.Cut(r.FullName, "/")
	ownerType := "User"
	if r.Organization {
		ownerType = "Organization"
	}
	return map[string]any{"id": 100 + slices.Index(g.repos, r), "name": name, "full_name": r.FullName,
		"private": r.Private, "default_branch": r.DefaultBranch, "clone_url": g.cloneURL(r),
		"html_url": g.Root() + "/" + r.FullName, "stargazers_count": r.Stars,
		"pushed_at": r.PushedAt.UTC().Format(time.RFC3339), "owner": map[string]any{"login": owner, "type": ownerType}}
}

// link writes GitHub's Link header for a page of path.
func (g *ghAPI) link(w http.ResponseWriter, r *http.Request, page, perPage int, more bool) {
	if more {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(perPage))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, g.Root(), r.URL.Path, q.Encode()))
	}
}

func (g *ghAPI) userRepos(w http.ResponseWriter, r *http.Request, u User) {
	page, perPage := intParam(r, "page", 1), intParam(r, "per_page", 30)
	items, more := paginate(g.visibleRepos(u), page, perPage)
	out := []map[string]any{}
	for _, repo := range items {
		out = append(out, g.repoJSON(repo))
	}
	g.link(w, r, page, perPage, more)
	writeJSON(w, http.StatusOK, out)
}

// installations lists the GitHub App installations a user access token may use; GitHub
// refuses other tokens.
func (g *ghAPI) installations(w http.ResponseWriter, r *http.Request, u User) {
	if u.Installations == nil {
		ghError(w, http.StatusForbidden, "You must authenticate with an access token authorized to a GitHub App in order to list installations")
		return
	}
	page, perPage := intParam(r, "page", 1), intParam(r, "per_page", 30)
	items, more := paginate(u.Installations, page, perPage)
	out := []map[string]any{}
	for _, id := range items {
		out = append(out, map[string]any{"id": id, "app_id": 1, "target_type": "Organization",
			"account": map[string]any{"login": fmt.Sprintf("org-%d", id), "type": "Organization"}})
	}
	g.link(w, r, page, perPage, more)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(u.Installations), "installations": out})
}

// target resolves {owner}/{name} to a repository the user sees, or answers 404.
func (g *ghAPI) target(w http.ResponseWriter, r *http.Request, u User) *Repo {
	repo := g.visibleRepo(u, r.PathValue("owner")+"/"+r.PathValue("name"))
	if repo == nil {
		ghError(w, http.StatusNotFound, "Not Found")
	}
	return repo
}

func (g *ghAPI) repo(w http.ResponseWriter, r *http.Request, u User) {
	if repo := g.target(w, r, u); repo != nil {
		writeJSON(w, http.StatusOK, g.repoJSON(repo))
	}
}

func (g *ghAPI) branches(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	if repo == nil {
		return
	}
	page, perPage := intParam(r, "page", 1), intParam(r, "per_page", 30)
	items, more := paginate(repo.Branches, page, perPage)
	out := []map[string]any{}
	for i, b := range items {
		out = append(out, map[string]any{"name": b, "protected": b == repo.DefaultBranch,
			"commit": map[string]any{"sha": fmt.Sprintf("%040x", i+1)}})
	}
	g.link(w, r, page, perPage, more)
	writeJSON(w, http.StatusOK, out)
}

func (g *ghAPI) issueJSON(i *Issue) map[string]any {
	state := "open"
	if i.Closed {
		state = "closed"
	}
	return map[string]any{"number": i.Number, "title": i.Title, "body": i.Body, "state": state,
		"user": map[string]any{"login": i.Author}, "html_url": g.Root() + "/" + i.Repo + "/issues/" + strconv.Itoa(i.Number),
		"repository_url": g.APIURL() + "/repos/" + i.Repo}
}

func (g *ghAPI) assignedIssues(w http.ResponseWriter, r *http.Request, u User) {
	out := []map[string]any{}
	for _, i := range g.issues {
		if !i.Closed && slices.Contains(i.Assignees, u.Login) && g.visibleRepo(u, i.Repo) != nil {
			j := g.issueJSON(i)
			j["repository"] = map[string]any{"full_name": i.Repo}
			out = append(out, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// searchIssues understands the qualifiers agentd sends: is:pr, is:open and author:LOGIN.
func (g *ghAPI) searchIssues(w http.ResponseWriter, r *http.Request, u User) {
	author := ""
	for _, term := range strings.Fields(r.URL.Query().Get("q")) {
		if a, ok := strings.CutPrefix(term, "author:"); ok {
			author = a
		}
	}
	items := []map[string]any{}
	for _, p := range g.pulls {
		if !p.Closed && (author == "" || p.Author == author) && g.visibleRepo(u, p.Repo) != nil {
			items = append(items, map[string]any{"number": p.Number, "title": p.Title, "state": "open",
				"repository_url": g.APIURL() + "/repos/" + p.Repo, "pull_request": map[string]any{}})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "incomplete_results": false, "items": items})
}

func (g *ghAPI) number(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		ghError(w, http.StatusNotFound, "Not Found")
	}
	return n, err == nil
}

func (g *ghAPI) issue(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	n, ok := g.number(w, r)
	if repo == nil || !ok {
		return
	}
	if i := g.Server.issue(repo.FullName, n); i != nil {
		writeJSON(w, http.StatusOK, g.issueJSON(i))
		return
	}
	if p := g.Server.pull(repo.FullName, n); p != nil {
		writeJSON(w, http.StatusOK, map[string]any{"number": p.Number, "title": p.Title, "body": p.Body, "state": "open",
			"user": map[string]any{"login": p.Author}, "pull_request": map[string]any{}})
		return
	}
	ghError(w, http.StatusNotFound, "Not Found")
}

func ghComments(cs []Comment, review bool) []map[string]any {
	out := []map[string]any{}
	for _, c := range cs {
		if (c.Path != "") != review {
			continue
		}
		j := map[string]any{"user": map[string]any{"login": c.Author}, "body": c.Body, "created_at": "2025-01-02T03:04:05Z"}
		if review {
			j["path"], j["line"] = c.Path, c.Line
		}
		out = append(out, j)
	}
	return out
}

func (g *ghAPI) issueComments(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	n, ok := g.number(w, r)
	if repo == nil || !ok {
		return
	}
	switch i, p := g.Server.issue(repo.FullName, n), g.Server.pull(repo.FullName, n); {
	case i != nil:
		writeJSON(w, http.StatusOK, ghComments(i.Comments, false))
	case p != nil:
		writeJSON(w, http.StatusOK, ghComments(p.Comments, false))
	default:
		ghError(w, http.StatusNotFound, "Not Found")
	}
}

func (g *ghAPI) targetPull(w http.ResponseWriter, r *http.Request, u User) *PullRequest {
	repo := g.target(w, r, u)
	n, ok := g.number(w, r)
	if repo == nil || !ok {
		return nil
	}
	p := g.Server.pull(repo.FullName, n)
	if p == nil {
		ghError(w, http.StatusNotFound, "Not Found")
	}
	return p
}

func (g *ghAPI) pullJSON(p *PullRequest) map[string]any {
	state := "open"
	if p.Closed {
		state = "closed"
	}
	mergeableState := "clean"
	if p.Conflicts {
		mergeableState = "dirty"
	}
	return map[string]any{"number": p.Number, "title": p.Title, "body": p.Body, "state": state, "draft": p.Draft,
		"user": map[string]any{"login": p.Author}, "html_url": g.Root() + "/" + p.Repo + "/pull/" + strconv.Itoa(p.Number),
		"head": map[string]any{"ref": p.Head, "sha": p.HeadSHA}, "base": map[string]any{"ref": p.Base},
		"mergeable": !p.Conflicts, "mergeable_state": mergeableState, "merged_at": nil}
}

func (g *ghAPI) pull(w http.ResponseWriter, r *http.Request, u User) {
	if p := g.targetPull(w, r, u); p != nil {
		writeJSON(w, http.StatusOK, g.pullJSON(p))
	}
}

func (g *ghAPI) reviews(w http.ResponseWriter, r *http.Request, u User) {
	p := g.targetPull(w, r, u)
	if p == nil {
		return
	}
	out := []map[string]any{}
	for _, rv := range p.Reviews {
		state := map[string]string{"approved": "APPROVED", "changes_requested": "CHANGES_REQUESTED", "commented": "COMMENTED"}[rv.State]
		out = append(out, map[string]any{"user": map[string]any{"login": rv.Author}, "state": state, "body": rv.Body})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *ghAPI) reviewComments(w http.ResponseWriter, r *http.Request, u User) {
	if p := g.targetPull(w, r, u); p != nil {
		writeJSON(w, http.StatusOK, ghComments(p.Comments, true))
	}
}

// pullAt finds the pull request whose head is the commit in the path.
func (g *ghAPI) pullAt(w http.ResponseWriter, r *http.Request, u User) (*PullRequest, bool) {
	repo := g.target(w, r, u)
	if repo == nil {
		return nil, false
	}
	for _, p := range g.pulls {
		if strings.EqualFold(p.Repo, repo.FullName) && p.HeadSHA == r.PathValue("sha") {
			return p, true
		}
	}
	return nil, true // a commit without pull request has no checks
}

func (g *ghAPI) checkRuns(w http.ResponseWriter, r *http.Request, u User) {
	p, ok := g.pullAt(w, r, u)
	if !ok {
		return
	}
	runs := []map[string]any{}
	if p != nil {
		for _, c := range p.Checks {
			run := map[string]any{"name": c.Name, "status": "completed", "conclusion": c.State, "html_url": g.Root() + "/runs/" + c.Name}
			if c.State == "pending" {
				run["status"], run["conclusion"] = "in_progress", nil
			}
			runs = append(runs, run)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": runs})
}

func (g *ghAPI) combinedStatus(w http.ResponseWriter, r *http.Request, u User) {
	if _, ok := g.pullAt(w, r, u); ok {
		// The checks are check runs; no integration left a commit status.
		writeJSON(w, http.StatusOK, map[string]any{"state": "pending", "statuses": []any{}, "total_count": 0})
	}
}

func (g *ghAPI) createPull(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	if repo == nil {
		return
	}
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if err := decode(r, &in); err != nil {
		ghError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	invalid := func(msg string) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []map[string]any{{"resource": "PullRequest", "code": "custom", "message": msg}}})
	}
	switch {
	case in.Title == "":
		invalid("title is missing")
		return
	case !slices.Contains(repo.Branches, in.Head):
		invalid("head is invalid")
		return
	case !slices.Contains(repo.Branches, in.Base):
		invalid("base is invalid")
		return
	}
	for _, p := range g.pulls {
		if !p.Closed && strings.EqualFold(p.Repo, repo.FullName) && p.Head == in.Head && p.Base == in.Base {
			invalid(fmt.Sprintf("A pull request already exists for %s:%s.", strings.Split(repo.FullName, "/")[0], in.Head))
			return
		}
	}
	p := g.open(PullRequest{Repo: repo.FullName, Title: in.Title, Body: in.Body, Author: u.Login, Head: in.Head, Base: in.Base, Draft: in.Draft})
	writeJSON(w, http.StatusCreated, g.pullJSON(p))
}

// optional is s, or null for "" as GitHub writes a blank profile field.
func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}
