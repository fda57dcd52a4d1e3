package gitprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// bitbucketDC speaks the REST API (1.0) of Bitbucket Data Center (and Server). A repository
// is PROJECT/slug (~USER/slug for a personal one). Issues live in Jira, not here.
type bitbucketDC struct{ *rest }

func (c *bitbucketDC) Family() string { return FamilyBitbucketDC }

// buildStatus is the server's build-status API, beside the core API at its root.
func (c *bitbucketDC) buildStatus() *rest {
	r := *c.rest
	root := *c.base
	root.Path = strings.TrimSuffix(root.Path, familyPath[FamilyBitbucketDC]) + "/rest/build-status/1.0"
	root.RawPath = ""
	r.base = &root
	return &r
}

type dcUser struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Slug         string `json:"slug"`
	DisplayName  string `json:"displayName"`
	EmailAddress string `json:"emailAddress"`
}

func (c *bitbucketDC) User(ctx context.Context) (User, error) {
	// The server has no "who am I" resource: every authenticated answer names the user in
	// X-AUSERNAME, and the recent repositories exist only for a user.
	h, err := c.get(ctx, "/profile/recent/repos", url.Values{"limit": {"1"}}, nil)
	if err != nil {
		return User{}, err
	}
	name := h.Get("X-AUSERNAME")
	if name == "" {
		return User{}, newError(c.provider, ErrUnavailable, nil, "%s did not say whose token the %s token is", c.host(), c.provider)
	}
	var u dcUser
	if _, err := c.get(ctx, "/users/"+url.PathEscape(name), nil, &u); err != nil {
		return User{}, err
	}
	return User{ID: strconv.FormatInt(u.ID, 10), Login: firstNonEmpty(u.Slug, u.Name), Name: u.DisplayName, Email: u.EmailAddress}, nil
}

// repoPath is /projects/KEY/repos/slug.
func (c *bitbucketDC) repoPath(name string) (string, error) {
	segs, err := repoSegments(c.provider, FamilyBitbucketDC, name)
	if err != nil {
		return "", err
	}
	return "/projects/" + url.PathEscape(segs[0]) + "/repos/" + url.PathEscape(segs[1]), nil
}

type dcRepo struct {
	ID      int64  `json:"id"`
	Slug    string `json:"slug"`
	Public  bool   `json:"public"`
	Project struct {
		Key  string `json:"key"`
		Type string `json:"type"`
	} `json:"project"`
	Links struct {
		Clone []bbLink `json:"clone"`
		Self  []bbLink `json:"self"`
	} `json:"links"`
}

func (r dcRepo) repository() Repository {
	out := Repository{ID: strconv.FormatInt(r.ID, 10), FullName: r.Project.Key + "/" + r.Slug, Private: !r.Public, OwnerType: "organization"}
	if r.Project.Type == "PERSONAL" {
		out.OwnerType = "user"
	}
	for _, l := range r.Links.Clone {
		if l.Name == "http" || l.Name == "https" {
			out.CloneURL = l.Href
		}
	}
	if len(r.Links.Self) > 0 {
		out.WebURL = r.Links.Self[0].Href
	}
	return out
}

func (c *bitbucketDC) Repository(ctx context.Context, name string) (Repository, error) {
	p, err := c.repoPath(name)
	if err != nil {
		return Repository{}, err
	}
	var r dcRepo
	if _, err := c.get(ctx, p, nil, &r); err != nil {
		return Repository{}, err
	}
	out := r.repository()
	var def struct {
		DisplayID string `json:"displayId"`
	}
	// An empty repository has no default branch yet: 404, and then none.
	if _, err := c.get(ctx, p+"/branches/default", nil, &def); err == nil {
		out.DefaultBranch = def.DisplayID
	} else if !errors.Is(err, ErrNotFound) {
		return Repository{}, err
	}
	return out, nil
}

// dcPage is Data Center's paged answer; pages are offsets (start) and sizes (limit).
type dcPage[T any] struct {
	Values     []T  `json:"values"`
	IsLastPage bool `json:"isLastPage"`
}

func dcQuery(page, perPage int) url.Values {
	return url.Values{"start": {strconv.Itoa((page - 1) * perPage)}, "limit": {strconv.Itoa(perPage)}}
}

func (c *bitbucketDC) Repositories(ctx context.Context, page, perPage int) (Page[Repository], error) {
	q := dcQuery(page, perPage)
	q.Set("permission", "REPO_READ")
	var repos dcPage[dcRepo]
	if _, err := c.get(ctx, "/repos", q, &repos); err != nil {
		return Page[Repository]{}, err
	}
	out := Page[Repository]{HasNext: !repos.IsLastPage}
	for _, r := range repos.Values {
		out.Items = append(out.Items, r.repository())
	}
	return out, nil
}

func (c *bitbucketDC) Branches(ctx context.Context, repo string, page, perPage int) (Page[Branch], error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return Page[Branch]{}, err
	}
	q := dcQuery(page, perPage)
	q.Set("orderBy", "MODIFICATION")
	var branches dcPage[struct {
		DisplayID    string `json:"displayId"`
		LatestCommit string `json:"latestCommit"`
	}]
	if _, err := c.get(ctx, p+"/branches", q, &branches); err != nil {
		return Page[Branch]{}, err
	}
	out := Page[Branch]{HasNext: !branches.IsLastPage}
	for _, b := range branches.Values {
		out.Items = append(out.Items, Branch{Name: b.DisplayID, CommitSHA: b.LatestCommit})
	}
	return out, nil
}

// AssignedIssues finds nothing: Data Center keeps no issues (Jira does).
func (c *bitbucketDC) AssignedIssues(ctx context.Context) ([]Issue, error) { return nil, nil }

type dcRef struct {
	ID           string `json:"id"`
	DisplayID    string `json:"displayId"`
	LatestCommit string `json:"latestCommit"`
	Repository   struct {
		Slug    string `json:"slug"`
		Project struct {
			Key string `json:"key"`
		} `json:"project"`
	} `json:"repository"`
}

type dcPull struct {
	ID          int    `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	State       string `json:"state"`
	Author      struct {
		User dcUser `json:"user"`
	} `json:"author"`
	FromRef   dcRef `json:"fromRef"`
	ToRef     dcRef `json:"toRef"`
	Reviewers []struct {
		User   dcUser `json:"user"`
		Status string `json:"status"`
	} `json:"reviewers"`
	Properties struct {
		OpenTaskCount int `json:"openTaskCount"`
	} `json:"properties"`
	Links struct {
		Self []bbLink `json:"self"`
	} `json:"links"`
}

func (p dcPull) pullRequest(repo string) PullRequest {
	state := map[string]string{"OPEN": "open", "MERGED": "merged"}[p.State]
	if state == "" {
		state = "closed" // declined
	}
	out := PullRequest{Repository: repo, Number: p.ID, Title: p.Title, Body: p.Description, State: state,
		Author: firstNonEmpty(p.Author.User.Slug, p.Author.User.Name), Head: p.FromRef.DisplayID,
		Base: p.ToRef.DisplayID, HeadSHA: p.FromRef.LatestCommit}
	if len(p.Links.Self) > 0 {
		out.URL = p.Links.Self[0].Href
	}
	for _, r := range p.Reviewers {
		state := map[string]string{"APPROVED": ReviewApproved, "NEEDS_WORK": ReviewChangesRequested}[r.Status]
		if state != "" {
			out.Reviews = append(out.Reviews, Review{Author: firstNonEmpty(r.User.Slug, r.User.Name), State: state})
		}
	}
	return out
}

func (c *bitbucketDC) OpenPullRequests(ctx context.Context) ([]PullRequestStatus, error) {
	var pulls dcPage[dcPull]
	q := url.Values{"role": {"AUTHOR"}, "state": {"OPEN"}, "limit": {strconv.Itoa(maxTaskPullRequests)}}
	if _, err := c.get(ctx, "/dashboard/pull-requests", q, &pulls); err != nil {
		return nil, err
	}
	return eachLimited(ctx, pulls.Values, func(ctx context.Context, listed dcPull) (PullRequestStatus, error) {
		repo := listed.ToRef.Repository.Project.Key + "/" + listed.ToRef.Repository.Slug
		pr, err := c.pullState(ctx, repo, listed.ID)
		if err != nil {
			return PullRequestStatus{}, err
		}
		st := PullRequestStatus{Repository: repo, Number: pr.Number, Title: pr.Title, Conflicts: pr.Conflicts,
			FailingChecks: anyCheck(pr.Checks, CheckFailure), UnresolvedComments: listed.Properties.OpenTaskCount > 0}
		for _, r := range pr.Reviews {
			st.UnresolvedComments = st.UnresolvedComments || r.State == ReviewChangesRequested
		}
		return st, nil
	})
}

// pullState reads a pull request with its builds, reviews and conflicts, without comments.
func (c *bitbucketDC) pullState(ctx context.Context, repo string, id int) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	pp := fmt.Sprintf("%s/pull-requests/%d", p, id)
	var pull dcPull
	if _, err := c.get(ctx, pp, nil, &pull); err != nil {
		return PullRequest{}, err
	}
	out := pull.pullRequest(repo)
	var merge struct {
		Conflicted bool `json:"conflicted"`
	}
	if _, err := c.get(ctx, pp+"/merge", nil, &merge); err != nil {
		return PullRequest{}, err
	}
	out.Conflicts = merge.Conflicted
	if out.HeadSHA != "" {
		var builds dcPage[struct {
			Key   string `json:"key"`
			Name  string `json:"name"`
			State string `json:"state"`
			URL   string `json:"url"`
		}]
		if _, err := c.buildStatus().get(ctx, "/commits/"+url.PathEscape(out.HeadSHA), nil, &builds); err != nil {
			return PullRequest{}, err
		}
		for _, b := range builds.Values {
			state := map[string]string{"SUCCESSFUL": CheckSuccess, "FAILED": CheckFailure}[b.State]
			if state == "" {
				state = CheckPending
			}
			out.Checks = append(out.Checks, Check{Name: firstNonEmpty(b.Name, b.Key), State: state, URL: b.URL})
		}
	}
	return out, nil
}

func (c *bitbucketDC) Issue(ctx context.Context, repo string, number int) (Issue, error) {
	return Issue{}, newError(c.provider, ErrUnsupported, nil, "Bitbucket Data Center keeps no issues (%s uses Jira for them)", c.host())
}

func (c *bitbucketDC) PullRequest(ctx context.Context, repo string, number int) (PullRequest, error) {
	out, err := c.pullState(ctx, repo, number)
	if err != nil {
		return PullRequest{}, err
	}
	p, _ := c.repoPath(repo)
	for page := 1; page <= maxCommentPages; page++ {
		var acts dcPage[struct {
			Action  string `json:"action"`
			Comment *struct {
				Text        string `json:"text"`
				Author      dcUser `json:"author"`
				CreatedDate int64  `json:"createdDate"`
				State       string `json:"state"`
			} `json:"comment"`
			CommentAnchor *struct {
				Path string `json:"path"`
				Line int    `json:"line"`
			} `json:"commentAnchor"`
		}]
		if _, err := c.get(ctx, fmt.Sprintf("%s/pull-requests/%d/activities", p, number), dcQuery(page, 100), &acts); err != nil {
			return PullRequest{}, err
		}
		for _, a := range acts.Values {
			if a.Action != "COMMENTED" || a.Comment == nil {
				continue
			}
			created := time.UnixMilli(a.Comment.CreatedDate).UTC()
			resolved := a.Comment.State == "RESOLVED"
			cm := Comment{Author: firstNonEmpty(a.Comment.Author.Slug, a.Comment.Author.Name), Body: a.Comment.Text,
				CreatedAt: &created, Resolved: &resolved}
			if a.CommentAnchor != nil {
				cm.Path, cm.Line = a.CommentAnchor.Path, a.CommentAnchor.Line
			}
			out.Comments = append(out.Comments, cm)
		}
		if acts.IsLastPage {
			break
		}
	}
	return out, nil
}

func (c *bitbucketDC) CreatePullRequest(ctx context.Context, repo string, pr NewPullRequest) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	segs, _ := repoSegments(c.provider, FamilyBitbucketDC, repo)
	target := map[string]any{"slug": segs[1], "project": map[string]string{"key": segs[0]}}
	body := map[string]any{"title": pr.Title, "description": pr.Body, "draft": pr.Draft,
		"fromRef": map[string]any{"id": "refs/heads/" + pr.Head, "repository": target},
		"toRef":   map[string]any{"id": "refs/heads/" + pr.Base, "repository": target}}
	var created dcPull
	if _, err := c.request(ctx, http.MethodPost, p+"/pull-requests", nil, body, &created); err != nil {
		return PullRequest{}, err
	}
	return created.pullRequest(repo), nil
}
