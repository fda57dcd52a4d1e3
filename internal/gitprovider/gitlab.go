package gitprovider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// gitlab speaks the REST API (v4) of gitlab.com and self-managed GitLab. Merge requests are
// its pull requests; a project is named by its full path, escaped as one path segment.
type gitlab struct{ *rest }

func (c *gitlab) Family() string { return FamilyGitLab }

type glUser struct {
	ID          int64  `json:"id"`
	Username    string `json:"username"`
	Name        string `json:"name"`
	Email       string `json:"email"`
	CommitEmail string `json:"commit_email"`
	PublicEmail string `json:"public_email"`
	AvatarURL   string `json:"avatar_url"`
	// Organization is what GitLab's profile calls the user's company.
	Organization string `json:"organization"`
}

func (c *gitlab) User(ctx context.Context) (User, error) {
	var u glUser
	if _, err := c.get(ctx, "/user", nil, &u); err != nil {
		return User{}, err
	}
	email := firstNonEmpty(u.CommitEmail, u.Email, u.PublicEmail)
	if email == "" {
		// GitLab attributes commits from its no-reply address to the account.
		email = fmt.Sprintf("%d-%s@users.noreply.%s", u.ID, u.Username, c.base.Hostname())
	}
	return User{ID: strconv.FormatInt(u.ID, 10), Login: u.Username, Name: u.Name, Email: email, AvatarURL: u.AvatarURL, Company: u.Organization}, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// projectPath is /projects/<group%2Fname>.
func (c *gitlab) projectPath(name string) (string, error) {
	segs, err := repoSegments(c.provider, FamilyGitLab, name)
	if err != nil {
		return "", err
	}
	return "/projects/" + url.PathEscape(strings.Join(segs, "/")), nil
}

type glProject struct {
	ID                int64      `json:"id"`
	PathWithNamespace string     `json:"path_with_namespace"`
	DefaultBranch     string     `json:"default_branch"`
	Visibility        string     `json:"visibility"`
	HTTPURLToRepo     string     `json:"http_url_to_repo"`
	WebURL            string     `json:"web_url"`
	StarCount         int        `json:"star_count"`
	LastActivityAt    *time.Time `json:"last_activity_at"`
	Namespace         struct {
		Kind string `json:"kind"`
	} `json:"namespace"`
}

func (p glProject) repository() Repository {
	owner := "user"
	if p.Namespace.Kind == "group" {
		owner = "organization"
	}
	return Repository{ID: strconv.FormatInt(p.ID, 10), FullName: p.PathWithNamespace, Private: p.Visibility != "public",
		DefaultBranch: p.DefaultBranch, CloneURL: p.HTTPURLToRepo, WebURL: p.WebURL, Stars: p.StarCount,
		PushedAt: p.LastActivityAt, OwnerType: owner}
}

func (c *gitlab) Repository(ctx context.Context, name string) (Repository, error) {
	p, err := c.projectPath(name)
	if err != nil {
		return Repository{}, err
	}
	var proj glProject
	if _, err := c.get(ctx, p, nil, &proj); err != nil {
		return Repository{}, err
	}
	return proj.repository(), nil
}

// glPage reads GitLab's paging headers. X-Total is left out on large listings.
func glPage(h http.Header) (hasNext bool, total *int) {
	if n, err := strconv.Atoi(h.Get("X-Total")); err == nil {
		total = &n
	}
	return h.Get("X-Next-Page") != "", total
}

func (c *gitlab) Repositories(ctx context.Context, page, perPage int) (Page[Repository], error) {
	q := pageQuery(page, perPage)
	q.Set("membership", "true")
	q.Set("order_by", "last_activity_at")
	q.Set("sort", "desc")
	var projects []glProject
	h, err := c.get(ctx, "/projects", q, &projects)
	if err != nil {
		return Page[Repository]{}, err
	}
	var out Page[Repository]
	out.HasNext, out.Total = glPage(h)
	for _, p := range projects {
		out.Items = append(out.Items, p.repository())
	}
	return out, nil
}

func (c *gitlab) Branches(ctx context.Context, repo string, page, perPage int) (Page[Branch], error) {
	p, err := c.projectPath(repo)
	if err != nil {
		return Page[Branch]{}, err
	}
	var branches []struct {
		Name   string `json:"name"`
		Commit struct {
			ID            string     `json:"id"`
			CommittedDate *time.Time `json:"committed_date"`
		} `json:"commit"`
		Protected bool `json:"protected"`
	}
	h, err := c.get(ctx, p+"/repository/branches", pageQuery(page, perPage), &branches)
	if err != nil {
		return Page[Branch]{}, err
	}
	var out Page[Branch]
	out.HasNext, out.Total = glPage(h)
	for _, b := range branches {
		out.Items = append(out.Items, Branch{Name: b.Name, CommitSHA: b.Commit.ID, Protected: b.Protected, LastPush: b.Commit.CommittedDate})
	}
	return out, nil
}

type glIssue struct {
	IID         int    `json:"iid"`
	ProjectID   int64  `json:"project_id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	State       string `json:"state"`
	WebURL      string `json:"web_url"`
	Author      glUser `json:"author"`
	References  struct {
		Full string `json:"full"`
	} `json:"references"`
}

// refProject is the project of a full reference: group/name#12 (issue) or group/name!5
// (merge request).
func refProject(ref string) string {
	if i := strings.LastIndexAny(ref, "#!"); i >= 0 {
		return ref[:i]
	}
	return ref
}

func glState(s string) string {
	switch s {
	case "opened", "locked":
		return "open"
	}
	return s
}

func (c *gitlab) AssignedIssues(ctx context.Context) ([]Issue, error) {
	var issues []glIssue
	q := url.Values{"scope": {"assigned_to_me"}, "state": {"opened"}, "per_page": {"100"}}
	if _, err := c.get(ctx, "/issues", q, &issues); err != nil {
		return nil, err
	}
	var out []Issue
	for _, i := range issues {
		out = append(out, Issue{Repository: refProject(i.References.Full), Number: i.IID, Title: i.Title,
			State: glState(i.State), Author: i.Author.Username, URL: i.WebURL})
	}
	return out, nil
}

type glMergeRequest struct {
	IID          int    `json:"iid"`
	ProjectID    int64  `json:"project_id"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	State        string `json:"state"`
	WebURL       string `json:"web_url"`
	Author       glUser `json:"author"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
	SHA          string `json:"sha"`
	HasConflicts bool   `json:"has_conflicts"`
	HeadPipeline *struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		WebURL string `json:"web_url"`
	} `json:"head_pipeline"`
	References struct {
		Full string `json:"full"`
	} `json:"references"`
}

func (m glMergeRequest) pullRequest(repo string) PullRequest {
	return PullRequest{Repository: repo, Number: m.IID, Title: m.Title, Body: m.Description, State: glState(m.State),
		Author: m.Author.Username, URL: m.WebURL, Head: m.SourceBranch, Base: m.TargetBranch, HeadSHA: m.SHA,
		Conflicts: m.HasConflicts}
}

func (c *gitlab) OpenPullRequests(ctx context.Context) ([]PullRequestStatus, error) {
	var mrs []glMergeRequest
	q := url.Values{"scope": {"created_by_me"}, "state": {"opened"}, "order_by": {"updated_at"},
		"per_page": {strconv.Itoa(maxTaskPullRequests)}}
	if _, err := c.get(ctx, "/merge_requests", q, &mrs); err != nil {
		return nil, err
	}
	return eachLimited(ctx, mrs, func(ctx context.Context, listed glMergeRequest) (PullRequestStatus, error) {
		repo := refProject(listed.References.Full)
		p, err := c.projectPath(repo)
		if err != nil {
			return PullRequestStatus{}, err
		}
		// The listing leaves out the head pipeline; the merge request itself has it.
		var mr glMergeRequest
		if _, err := c.get(ctx, fmt.Sprintf("%s/merge_requests/%d", p, listed.IID), nil, &mr); err != nil {
			return PullRequestStatus{}, err
		}
		comments, err := c.discussions(ctx, p, mr.IID)
		if err != nil {
			return PullRequestStatus{}, err
		}
		st := PullRequestStatus{Repository: repo, Number: mr.IID, Title: mr.Title, Conflicts: mr.HasConflicts,
			FailingChecks: mr.HeadPipeline != nil && mr.HeadPipeline.Status == "failed"}
		for _, cm := range comments {
			st.UnresolvedComments = st.UnresolvedComments || cm.Resolved != nil && !*cm.Resolved
		}
		return st, nil
	})
}

type glNote struct {
	Body       string     `json:"body"`
	Author     glUser     `json:"author"`
	System     bool       `json:"system"`
	Resolvable bool       `json:"resolvable"`
	Resolved   bool       `json:"resolved"`
	CreatedAt  *time.Time `json:"created_at"`
	Position   *struct {
		NewPath string `json:"new_path"`
		NewLine int    `json:"new_line"`
	} `json:"position"`
}

func (n glNote) comment() Comment {
	c := Comment{Author: n.Author.Username, Body: n.Body, CreatedAt: n.CreatedAt}
	if n.Resolvable {
		resolved := n.Resolved
		c.Resolved = &resolved
	}
	if n.Position != nil {
		c.Path, c.Line = n.Position.NewPath, n.Position.NewLine
	}
	return c
}

// discussions reads a merge request's threads as comments, system notes left out.
func (c *gitlab) discussions(ctx context.Context, projectPath string, iid int) ([]Comment, error) {
	var out []Comment
	for page := 1; page <= maxCommentPages; page++ {
		var ds []struct {
			Notes []glNote `json:"notes"`
		}
		h, err := c.get(ctx, fmt.Sprintf("%s/merge_requests/%d/discussions", projectPath, iid), pageQuery(page, 100), &ds)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			for _, n := range d.Notes {
				if !n.System {
					out = append(out, n.comment())
				}
			}
		}
		if h.Get("X-Next-Page") == "" {
			break
		}
	}
	return out, nil
}

func (c *gitlab) Issue(ctx context.Context, repo string, number int) (Issue, error) {
	p, err := c.projectPath(repo)
	if err != nil {
		return Issue{}, err
	}
	var i glIssue
	if _, err := c.get(ctx, fmt.Sprintf("%s/issues/%d", p, number), nil, &i); err != nil {
		return Issue{}, err
	}
	out := Issue{Repository: repo, Number: i.IID, Title: i.Title, Body: i.Description, State: glState(i.State),
		Author: i.Author.Username, URL: i.WebURL}
	for page := 1; page <= maxCommentPages; page++ {
		var notes []glNote
		q := pageQuery(page, 100)
		q.Set("sort", "asc")
		h, err := c.get(ctx, fmt.Sprintf("%s/issues/%d/notes", p, number), q, &notes)
		if err != nil {
			return Issue{}, err
		}
		for _, n := range notes {
			if !n.System {
				out.Comments = append(out.Comments, n.comment())
			}
		}
		if h.Get("X-Next-Page") == "" {
			break
		}
	}
	return out, nil
}

func (c *gitlab) PullRequest(ctx context.Context, repo string, number int) (PullRequest, error) {
	p, err := c.projectPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	var mr glMergeRequest
	if _, err := c.get(ctx, fmt.Sprintf("%s/merge_requests/%d", p, number), nil, &mr); err != nil {
		return PullRequest{}, err
	}
	out := mr.pullRequest(repo)
	if mr.HeadPipeline != nil {
		var jobs []struct {
			Name         string `json:"name"`
			Status       string `json:"status"`
			WebURL       string `json:"web_url"`
			AllowFailure bool   `json:"allow_failure"`
		}
		if _, err := c.get(ctx, fmt.Sprintf("%s/pipelines/%d/jobs", p, mr.HeadPipeline.ID), pageQuery(1, 100), &jobs); err != nil {
			return PullRequest{}, err
		}
		for _, j := range jobs {
			state := CheckPending
			switch {
			case j.Status == "success", j.Status == "skipped", j.AllowFailure && j.Status == "failed":
				state = CheckSuccess
			case j.Status == "failed", j.Status == "canceled":
				state = CheckFailure
			}
			out.Checks = append(out.Checks, Check{Name: j.Name, State: state, URL: j.WebURL})
		}
	}
	var approvals struct {
		ApprovedBy []struct {
			User glUser `json:"user"`
		} `json:"approved_by"`
	}
	if _, err := c.get(ctx, fmt.Sprintf("%s/merge_requests/%d/approvals", p, number), nil, &approvals); err != nil {
		return PullRequest{}, err
	}
	for _, a := range approvals.ApprovedBy {
		out.Reviews = append(out.Reviews, Review{Author: a.User.Username, State: ReviewApproved})
	}
	if out.Comments, err = c.discussions(ctx, p, number); err != nil {
		return PullRequest{}, err
	}
	return out, nil
}

func (c *gitlab) CreatePullRequest(ctx context.Context, repo string, pr NewPullRequest) (PullRequest, error) {
	p, err := c.projectPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	title := pr.Title
	if pr.Draft {
		title = "Draft: " + title // how GitLab marks a draft
	}
	body := map[string]any{"source_branch": pr.Head, "target_branch": pr.Base, "title": title, "description": pr.Body}
	var mr glMergeRequest
	if _, err := c.request(ctx, http.MethodPost, p+"/merge_requests", nil, body, &mr); err != nil {
		return PullRequest{}, err
	}
	return mr.pullRequest(repo), nil
}
