package providertest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// NewBitbucketDC starts a Bitbucket Data Center REST API (developer.atlassian.com/server/
// bitbucket) under /rest/api/1.0, with the build-status API beside it; Root() is what a
// user gives as its host. Repositories are PROJECT/slug.
func NewBitbucketDC(t Cleaner) *Server {
	return newServer(t, "bitbucket_data_center", "/rest/api/1.0", func(s *Server, mux *http.ServeMux) {
		d := &dcAPI{s}
		p := "/rest/api/1.0"
		rp := p + "/projects/{key}/repos/{slug}"
		mux.HandleFunc("GET "+p+"/application-properties", d.applicationProperties)
		mux.HandleFunc("GET "+p+"/profile/recent/repos", d.authed(d.recentRepos))
		mux.HandleFunc("GET "+p+"/users/{slug}", d.authed(d.user))
		mux.HandleFunc("GET "+p+"/repos", d.authed(d.listRepos))
		mux.HandleFunc("GET "+p+"/projects", d.authed(d.projects))
		mux.HandleFunc("GET "+p+"/dashboard/pull-requests", d.authed(d.dashboardPulls))
		mux.HandleFunc("GET "+rp, d.authed(d.repo))
		mux.HandleFunc("GET "+rp+"/branches", d.authed(d.branches))
		mux.HandleFunc("GET "+rp+"/branches/default", d.authed(d.defaultBranch))
		mux.HandleFunc("GET "+rp+"/pull-requests/{id}", d.authed(d.pull))
		mux.HandleFunc("GET "+rp+"/pull-requests/{id}/merge", d.authed(d.merge))
		mux.HandleFunc("GET "+rp+"/pull-requests/{id}/activities", d.authed(d.activities))
		mux.HandleFunc("POST "+rp+"/pull-requests", d.authed(d.createPull))
		mux.HandleFunc("GET /rest/build-status/1.0/commits/{sha}", d.authed(d.builds))
	})
}

type dcAPI struct{ *Server }

func dcError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"errors": []map[string]any{{"context": nil, "message": msg, "exceptionName": nil}}})
}

// authed demands a known token and names its user in X-AUSERNAME, as the server does on
// every authenticated answer.
func (d *dcAPI) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := d.userOf(r, "")
		if !ok {
			dcError(w, http.StatusUnauthorized, "Authentication failed. Please check your credentials and try again.")
			return
		}
		w.Header().Set("X-AUSERNAME", u.Login)
		d.mu.Lock()
		defer d.mu.Unlock()
		h(w, r, u)
	}
}

func (d *dcAPI) applicationProperties(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": "8.19.1", "buildNumber": "8019001", "buildDate": "1700000000000", "displayName": "Bitbucket"})
}

// page answers one page of values in Data Center's shape (start, limit).
func dcPage[T any](w http.ResponseWriter, r *http.Request, items []T) {
	start, limit := intParam(r, "start", 0), intParam(r, "limit", 25)
	if limit < 1 {
		limit = 25
	}
	values, more := paginate(items, start/limit+1, limit)
	out := map[string]any{"values": values, "size": len(values), "start": start, "limit": limit, "isLastPage": !more}
	if more {
		out["nextPageStart"] = start + limit
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *dcAPI) recentRepos(w http.ResponseWriter, r *http.Request, u User) {
	dcPage(w, r, []map[string]any{})
}

// projects lists the projects whose repositories the user sees; personal projects (~user)
// are not listed, as in Data Center.
func (d *dcAPI) projects(w http.ResponseWriter, r *http.Request, u User) {
	var keys []string
	for _, repo := range d.visibleRepos(u) {
		key, _, _ := strings.Cut(repo.FullName, "/")
		if !strings.HasPrefix(key, "~") && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	out := []map[string]any{}
	for i, key := range keys {
		out = append(out, map[string]any{"key": key, "id": i + 1, "name": key, "public": false, "type": "NORMAL"})
	}
	dcPage(w, r, out)
}

func dcUserJSON(u User) map[string]any {
	return map[string]any{"id": u.ID, "name": u.Login, "slug": u.Login, "displayName": u.Name, "emailAddress": u.Email, "type": "NORMAL", "active": true}
}

func (d *dcAPI) user(w http.ResponseWriter, r *http.Request, u User) {
	for _, other := range d.users {
		if other.Login == r.PathValue("slug") {
			writeJSON(w, http.StatusOK, dcUserJSON(other))
			return
		}
	}
	dcError(w, http.StatusNotFound, "User "+r.PathValue("slug")+" does not exist.")
}

func (d *dcAPI) repoJSON(repo *Repo) map[string]any {
	key, slug, _ := strings.Cut(repo.FullName, "/")
	typ := "NORMAL"
	if strings.HasPrefix(key, "~") {
		typ = "PERSONAL"
	}
	return map[string]any{"id": 100 + slices.Index(d.repos, repo), "slug": slug, "name": slug, "public": !repo.Private,
		"project": map[string]any{"key": key, "type": typ},
		"links": map[string]any{"clone": []map[string]any{{"name": "http", "href": d.cloneURL(repo)}, {"name": "ssh", "href": "ssh://git@bitbucket.example:7999/" + strings.ToLower(repo.FullName) + ".git"}},
			"self": []map[string]any{{"href": d.Root() + "/projects/" + key + "/repos/" + slug + "/browse"}}}}
}

func (d *dcAPI) target(w http.ResponseWriter, r *http.Request, u User) *Repo {
	repo := d.visibleRepo(u, r.PathValue("key")+"/"+r.PathValue("slug"))
	if repo == nil {
		dcError(w, http.StatusNotFound, "Repository "+r.PathValue("key")+"/"+r.PathValue("slug")+" does not exist.")
	}
	return repo
}

func (d *dcAPI) repo(w http.ResponseWriter, r *http.Request, u User) {
	if repo := d.target(w, r, u); repo != nil {
		writeJSON(w, http.StatusOK, d.repoJSON(repo))
	}
}

func (d *dcAPI) listRepos(w http.ResponseWriter, r *http.Request, u User) {
	var out []map[string]any
	for _, repo := range d.visibleRepos(u) {
		out = append(out, d.repoJSON(repo))
	}
	dcPage(w, r, out)
}

func (d *dcAPI) branches(w http.ResponseWriter, r *http.Request, u User) {
	repo := d.target(w, r, u)
	if repo == nil {
		return
	}
	var out []map[string]any
	for i, b := range repo.Branches {
		out = append(out, map[string]any{"id": "refs/heads/" + b, "displayId": b, "type": "BRANCH",
			"latestCommit": fmt.Sprintf("%040x", i+1), "isDefault": b == repo.DefaultBranch})
	}
	dcPage(w, r, out)
}

func (d *dcAPI) defaultBranch(w http.ResponseWriter, r *http.Request, u User) {
	if repo := d.target(w, r, u); repo != nil {
		writeJSON(w, http.StatusOK, map[string]any{"id": "refs/heads/" + repo.DefaultBranch, "displayId": repo.DefaultBranch, "type": "BRANCH", "isDefault": true})
	}
}

func (d *dcAPI) pullJSON(p *PullRequest) map[string]any {
	key, slug, _ := strings.Cut(p.Repo, "/")
	repo := map[string]any{"slug": slug, "project": map[string]any{"key": key}}
	state := "OPEN"
	if p.Closed {
		state = "DECLINED"
	}
	var reviewers []map[string]any
	openTasks := 0
	for _, rv := range p.Reviews {
		status := map[string]string{"approved": "APPROVED", "changes_requested": "NEEDS_WORK"}[rv.State]
		if status == "" {
			status = "UNAPPROVED"
		}
		reviewers = append(reviewers, map[string]any{"user": map[string]any{"name": rv.Author, "slug": rv.Author}, "status": status})
	}
	for _, c := range p.Comments {
		if c.Path != "" && !c.Resolved {
			openTasks++
		}
	}
	return map[string]any{"id": p.Number, "title": p.Title, "description": p.Body, "state": state, "open": !p.Closed, "draft": p.Draft,
		"author":    map[string]any{"user": map[string]any{"name": p.Author, "slug": p.Author}, "role": "AUTHOR"},
		"fromRef":   map[string]any{"id": "refs/heads/" + p.Head, "displayId": p.Head, "latestCommit": p.HeadSHA, "repository": repo},
		"toRef":     map[string]any{"id": "refs/heads/" + p.Base, "displayId": p.Base, "repository": repo},
		"reviewers": reviewers, "properties": map[string]any{"openTaskCount": openTasks},
		"links": map[string]any{"self": []map[string]any{{"href": d.Root() + "/projects/" + key + "/repos/" + slug + "/pull-requests/" + strconv.Itoa(p.Number)}}}}
}

func (d *dcAPI) dashboardPulls(w http.ResponseWriter, r *http.Request, u User) {
	var out []map[string]any
	for _, p := range d.pulls {
		if !p.Closed && p.Author == u.Login && d.visibleRepo(u, p.Repo) != nil {
			out = append(out, d.pullJSON(p))
		}
	}
	dcPage(w, r, out)
}

func (d *dcAPI) targetPull(w http.ResponseWriter, r *http.Request, u User) *PullRequest {
	repo := d.target(w, r, u)
	if repo == nil {
		return nil
	}
	n, err := strconv.Atoi(r.PathValue("id"))
	var p *PullRequest
	if err == nil {
		p = d.Server.pull(repo.FullName, n)
	}
	if p == nil {
		dcError(w, http.StatusNotFound, "Pull request "+r.PathValue("id")+" does not exist in "+repo.FullName+".")
	}
	return p
}

func (d *dcAPI) pull(w http.ResponseWriter, r *http.Request, u User) {
	if p := d.targetPull(w, r, u); p != nil {
		writeJSON(w, http.StatusOK, d.pullJSON(p))
	}
}

func (d *dcAPI) merge(w http.ResponseWriter, r *http.Request, u User) {
	if p := d.targetPull(w, r, u); p != nil {
		outcome := "CLEAN"
		if p.Conflicts {
			outcome = "CONFLICTED"
		}
		writeJSON(w, http.StatusOK, map[string]any{"canMerge": !p.Conflicts, "conflicted": p.Conflicts, "outcome": outcome, "vetoes": []any{}})
	}
}

func (d *dcAPI) activities(w http.ResponseWriter, r *http.Request, u User) {
	p := d.targetPull(w, r, u)
	if p == nil {
		return
	}
	out := []map[string]any{{"action": "OPENED", "user": map[string]any{"name": p.Author}}}
	for i, c := range p.Comments {
		state := "OPEN"
		if c.Resolved {
			state = "RESOLVED"
		}
		a := map[string]any{"action": "COMMENTED", "comment": map[string]any{"id": i + 1, "text": c.Body,
			"author": map[string]any{"name": c.Author, "slug": c.Author}, "createdDate": 1735787045000, "state": state}}
		if c.Path != "" {
			a["commentAnchor"] = map[string]any{"path": c.Path, "line": c.Line, "lineType": "ADDED"}
		}
		out = append(out, a)
	}
	dcPage(w, r, out)
}

func (d *dcAPI) builds(w http.ResponseWriter, r *http.Request, u User) {
	var out []map[string]any
	for _, p := range d.pulls {
		if p.HeadSHA == r.PathValue("sha") && d.visibleRepo(u, p.Repo) != nil {
			for _, c := range p.Checks {
				state := map[string]string{"success": "SUCCESSFUL", "failure": "FAILED", "pending": "INPROGRESS"}[c.State]
				out = append(out, map[string]any{"key": c.Name, "name": c.Name, "state": state, "url": d.Root() + "/builds/" + c.Name})
			}
		}
	}
	dcPage(w, r, out)
}

func (d *dcAPI) createPull(w http.ResponseWriter, r *http.Request, u User) {
	repo := d.target(w, r, u)
	if repo == nil {
		return
	}
	var in struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Draft       bool   `json:"draft"`
		FromRef     struct {
			ID string `json:"id"`
		} `json:"fromRef"`
		ToRef struct {
			ID string `json:"id"`
		} `json:"toRef"`
	}
	if err := decode(r, &in); err != nil || in.Title == "" {
		dcError(w, http.StatusBadRequest, "A title is required.")
		return
	}
	head, base := strings.TrimPrefix(in.FromRef.ID, "refs/heads/"), strings.TrimPrefix(in.ToRef.ID, "refs/heads/")
	if !slices.Contains(repo.Branches, head) || !slices.Contains(repo.Branches, base) {
		dcError(w, http.StatusNotFound, "Repository "+repo.FullName+" does not contain the ref "+in.FromRef.ID+".")
		return
	}
	for _, p := range d.pulls {
		if !p.Closed && strings.EqualFold(p.Repo, repo.FullName) && p.Head == head && p.Base == base {
			dcError(w, http.StatusConflict, "Only one pull request may be open for a given source and target branch")
			return
		}
	}
	p := d.open(PullRequest{Repo: repo.FullName, Title: in.Title, Body: in.Description, Author: u.Login, Head: head, Base: base, Draft: in.Draft})
	writeJSON(w, http.StatusCreated, d.pullJSON(p))
}
