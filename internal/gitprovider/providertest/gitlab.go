package providertest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// NewGitLab starts a GitLab REST API v4 (docs.gitlab.com/api) under /api/v4, as gitlab.com
// and self-managed GitLab serve it.
func NewGitLab(t Cleaner) *Server {
	return newServer(t, "gitlab", "/api/v4", func(s *Server, mux *http.ServeMux) {
		g := &glAPI{s}
		p := "/api/v4"
		mux.HandleFunc("GET "+p+"/user", g.authed(g.user))
		mux.HandleFunc("GET "+p+"/version", g.authed(g.version))
		mux.HandleFunc("GET "+p+"/projects", g.authed(g.projects))
		mux.HandleFunc("GET "+p+"/issues", g.authed(g.assignedIssues))
		mux.HandleFunc("GET "+p+"/merge_requests", g.authed(g.myMergeRequests))
		mux.HandleFunc("GET "+p+"/projects/{id}", g.authed(g.project))
		mux.HandleFunc("GET "+p+"/projects/{id}/repository/branches", g.authed(g.branches))
		mux.HandleFunc("GET "+p+"/projects/{id}/issues/{iid}", g.authed(g.issue))
		mux.HandleFunc("GET "+p+"/projects/{id}/issues/{iid}/notes", g.authed(g.issueNotes))
		mux.HandleFunc("GET "+p+"/projects/{id}/merge_requests/{iid}", g.authed(g.mergeRequest))
		mux.HandleFunc("GET "+p+"/projects/{id}/merge_requests/{iid}/discussions", g.authed(g.discussions))
		mux.HandleFunc("GET "+p+"/projects/{id}/merge_requests/{iid}/approvals", g.authed(g.approvals))
		mux.HandleFunc("GET "+p+"/projects/{id}/pipelines/{pid}/jobs", g.authed(g.jobs))
		mux.HandleFunc("POST "+p+"/projects/{id}/merge_requests", g.authed(g.createMergeRequest))
	})
}

type glAPI struct{ *Server }

func glError(w http.ResponseWriter, status int, msg any) {
	writeJSON(w, status, map[string]any{"message": msg})
}

// authed demands a known token (Authorization: Bearer or PRIVATE-TOKEN); the handler runs
// with s.mu held.
func (g *glAPI) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := g.userOf(r, "PRIVATE-TOKEN")
		if !ok {
			glError(w, http.StatusUnauthorized, "401 Unauthorized")
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		h(w, r, u)
	}
}

func (g *glAPI) user(w http.ResponseWriter, r *http.Request, u User) {
	writeJSON(w, http.StatusOK, map[string]any{"id": u.ID, "username": u.Login, "name": u.Name, "state": "active",
		"email": u.Email, "commit_email": u.Email, "public_email": "", "avatar_url": "https://avatars.example/" + u.Login, "organization": u.Company})
}

func (g *glAPI) version(w http.ResponseWriter, r *http.Request, u User) {
	writeJSON(w, http.StatusOK, map[string]any{"version": "17.5.0-ee", "revision": "abc123"})
}

// page writes GitLab's paging headers and returns the page's items.
func glPage[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	page, perPage := intParam(r, "page", 1), intParam(r, "per_page", 20)
	out, more := paginate(items, page, perPage)
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(perPage))
	w.Header().Set("X-Total", strconv.Itoa(len(items)))
	next := ""
	if more {
		next = strconv.Itoa(page + 1)
	}
	w.Header().Set("X-Next-Page", next)
	return out
}

func (g *glAPI) projectJSON(r *Repo) map[string]any {
	visibility := "public"
	if r.Private {
		visibility = "private"
	}
	kind := "user"
	if r.Organization {
		kind = "group"
	}
	return map[string]any{"id": 100 + slices.Index(g.repos, r), "path_with_namespace": r.FullName,
		"default_branch": r.DefaultBranch, "visibility": visibility, "http_url_to_repo": g.cloneURL(r),
		"web_url": g.Root() + "/" + r.FullName, "star_count": r.Stars,
		"last_activity_at": r.PushedAt.UTC().Format(time.RFC3339), "namespace": map[string]any{"kind": kind}}
}

// target resolves {id} (a numeric id or the URL-encoded full path) to a project the user
// sees, or answers 404.
func (g *glAPI) target(w http.ResponseWriter, r *http.Request, u User) *Repo {
	id := r.PathValue("id")
	var repo *Repo
	if n, err := strconv.Atoi(id); err == nil && n >= 100 && n-100 < len(g.repos) {
		repo = g.visibleRepo(u, g.repos[n-100].FullName)
	} else {
		repo = g.visibleRepo(u, id)
	}
	if repo == nil {
		glError(w, http.StatusNotFound, "404 Project Not Found")
	}
	return repo
}

func (g *glAPI) project(w http.ResponseWriter, r *http.Request, u User) {
	if repo := g.target(w, r, u); repo != nil {
		writeJSON(w, http.StatusOK, g.projectJSON(repo))
	}
}

func (g *glAPI) projects(w http.ResponseWriter, r *http.Request, u User) {
	out := []map[string]any{}
	for _, repo := range glPage(w, r, g.visibleRepos(u)) {
		out = append(out, g.projectJSON(repo))
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *glAPI) branches(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	if repo == nil {
		return
	}
	out := []map[string]any{}
	for i, b := range glPage(w, r, repo.Branches) {
		out = append(out, map[string]any{"name": b, "protected": b == repo.DefaultBranch, "default": b == repo.DefaultBranch,
			"commit": map[string]any{"id": fmt.Sprintf("%040x", i+1), "committed_date": "2025-01-02T03:04:05.000Z"}})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *glAPI) issueJSON(i *Issue) map[string]any {
	state := "opened"
	if i.Closed {
		state = "closed"
	}
	return map[string]any{"iid": i.Number, "title": i.Title, "description": i.Body, "state": state,
		"author": map[string]any{"username": i.Author}, "web_url": g.Root() + "/" + i.Repo + "/-/issues/" + strconv.Itoa(i.Number),
		"references": map[string]any{"full": i.Repo + "#" + strconv.Itoa(i.Number)}}
}

func (g *glAPI) assignedIssues(w http.ResponseWriter, r *http.Request, u User) {
	out := []map[string]any{}
	for _, i := range g.issues {
		if !i.Closed && slices.Contains(i.Assignees, u.Login) && g.visibleRepo(u, i.Repo) != nil {
			out = append(out, g.issueJSON(i))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *glAPI) mrJSON(p *PullRequest) map[string]any {
	state := "opened"
	if p.Closed {
		state = "closed"
	}
	j := map[string]any{"iid": p.Number, "title": p.Title, "description": p.Body, "state": state, "draft": p.Draft,
		"author": map[string]any{"username": p.Author}, "source_branch": p.Head, "target_branch": p.Base, "sha": p.HeadSHA,
		"has_conflicts": p.Conflicts, "web_url": g.Root() + "/" + p.Repo + "/-/merge_requests/" + strconv.Itoa(p.Number),
		"references": map[string]any{"full": p.Repo + "!" + strconv.Itoa(p.Number)}, "head_pipeline": nil}
	if len(p.Checks) > 0 {
		status := "success"
		for _, c := range p.Checks {
			switch {
			case c.State == "failure":
				status = "failed"
			case c.State == "pending" && status != "failed":
				status = "running"
			}
		}
		j["head_pipeline"] = map[string]any{"id": p.Number, "status": status, "web_url": g.Root() + "/pipelines/" + strconv.Itoa(p.Number)}
	}
	return j
}

func (g *glAPI) myMergeRequests(w http.ResponseWriter, r *http.Request, u User) {
	out := []map[string]any{}
	for _, p := range g.pulls {
		if !p.Closed && p.Author == u.Login && g.visibleRepo(u, p.Repo) != nil {
			j := g.mrJSON(p)
			delete(j, "head_pipeline") // the listing leaves it out
			out = append(out, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *glAPI) iid(w http.ResponseWriter, r *http.Request, name string) (int, bool) {
	n, err := strconv.Atoi(r.PathValue(name))
	if err != nil {
		glError(w, http.StatusNotFound, "404 Not found")
	}
	return n, err == nil
}

func (g *glAPI) issue(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	n, ok := g.iid(w, r, "iid")
	if repo == nil || !ok {
		return
	}
	if i := g.Server.issue(repo.FullName, n); i != nil {
		writeJSON(w, http.StatusOK, g.issueJSON(i))
		return
	}
	glError(w, http.StatusNotFound, "404 Issue Not Found")
}

func glNote(c Comment) map[string]any {
	n := map[string]any{"body": c.Body, "author": map[string]any{"username": c.Author}, "system": false,
		"created_at": "2025-01-02T03:04:05.000Z", "resolvable": c.Path != "", "resolved": c.Resolved}
	if c.Path != "" {
		n["position"] = map[string]any{"new_path": c.Path, "new_line": c.Line}
	}
	return n
}

func (g *glAPI) issueNotes(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	n, ok := g.iid(w, r, "iid")
	if repo == nil || !ok {
		return
	}
	i := g.Server.issue(repo.FullName, n)
	if i == nil {
		glError(w, http.StatusNotFound, "404 Issue Not Found")
		return
	}
	// A system note, as GitLab records changes among the comments.
	out := []map[string]any{{"body": "changed the description", "author": map[string]any{"username": i.Author}, "system": true}}
	for _, c := range i.Comments {
		out = append(out, glNote(c))
	}
	writeJSON(w, http.StatusOK, glPage(w, r, out))
}

func (g *glAPI) targetMR(w http.ResponseWriter, r *http.Request, u User) *PullRequest {
	repo := g.target(w, r, u)
	n, ok := g.iid(w, r, "iid")
	if repo == nil || !ok {
		return nil
	}
	p := g.Server.pull(repo.FullName, n)
	if p == nil {
		glError(w, http.StatusNotFound, "404 Not found")
	}
	return p
}

func (g *glAPI) mergeRequest(w http.ResponseWriter, r *http.Request, u User) {
	if p := g.targetMR(w, r, u); p != nil {
		writeJSON(w, http.StatusOK, g.mrJSON(p))
	}
}

func (g *glAPI) discussions(w http.ResponseWriter, r *http.Request, u User) {
	p := g.targetMR(w, r, u)
	if p == nil {
		return
	}
	out := []map[string]any{}
	for i, c := range p.Comments {
		out = append(out, map[string]any{"id": fmt.Sprintf("%040x", i+1), "notes": []any{glNote(c)}})
	}
	writeJSON(w, http.StatusOK, glPage(w, r, out))
}

func (g *glAPI) approvals(w http.ResponseWriter, r *http.Request, u User) {
	p := g.targetMR(w, r, u)
	if p == nil {
		return
	}
	by := []map[string]any{}
	for _, rv := range p.Reviews {
		if rv.State == "approved" {
			by = append(by, map[string]any{"user": map[string]any{"username": rv.Author}})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approved": len(by) > 0, "approved_by": by})
}

func (g *glAPI) jobs(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	pid, ok := g.iid(w, r, "pid")
	if repo == nil || !ok {
		return
	}
	p := g.Server.pull(repo.FullName, pid) // a merge request's pipeline has its number
	if p == nil {
		glError(w, http.StatusNotFound, "404 Not found")
		return
	}
	out := []map[string]any{}
	for _, c := range p.Checks {
		status := map[string]string{"success": "success", "failure": "failed", "pending": "running"}[c.State]
		out = append(out, map[string]any{"name": c.Name, "status": status, "allow_failure": false, "web_url": g.Root() + "/jobs/" + c.Name})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *glAPI) createMergeRequest(w http.ResponseWriter, r *http.Request, u User) {
	repo := g.target(w, r, u)
	if repo == nil {
		return
	}
	var in struct {
		SourceBranch string `json:"source_branch"`
		TargetBranch string `json:"target_branch"`
		Title        string `json:"title"`
		Description  string `json:"description"`
	}
	if err := decode(r, &in); err != nil || in.Title == "" || in.SourceBranch == "" || in.TargetBranch == "" {
		glError(w, http.StatusBadRequest, "title, source_branch and target_branch are missing")
		return
	}
	if !slices.Contains(repo.Branches, in.SourceBranch) || !slices.Contains(repo.Branches, in.TargetBranch) {
		glError(w, http.StatusBadRequest, []string{"Source branch does not exist"})
		return
	}
	for _, p := range g.pulls {
		if !p.Closed && strings.EqualFold(p.Repo, repo.FullName) && p.Head == in.SourceBranch && p.Base == in.TargetBranch {
			glError(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", p.Number)})
			return
		}
	}
	title, draft := strings.CutPrefix(in.Title, "Draft: ")
	p := g.open(PullRequest{Repo: repo.FullName, Title: title, Body: in.Description, Author: u.Login,
		Head: in.SourceBranch, Base: in.TargetBranch, Draft: draft})
	writeJSON(w, http.StatusCreated, g.mrJSON(p))
}
