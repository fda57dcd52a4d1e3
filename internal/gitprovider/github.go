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

// github speaks the REST API of github.com (api.github.com) and GitHub Enterprise Server
// (<host>/api/v3).
type github struct{ *rest }

func (c *github) Family() string { return FamilyGitHub }

type ghUser struct {
	ID        int64  `json:"id"`
	Login     string `json:"login"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	AvatarURL string `json:"avatar_url"`
	Company   string `json:"company"`
}

func (c *github) User(ctx context.Context) (User, error) {
	var u ghUser
	if _, err := c.get(ctx, "/user", nil, &u); err != nil {
		return User{}, err
	}
	out := User{ID: strconv.FormatInt(u.ID, 10), Login: u.Login, Name: u.Name, Email: u.Email, AvatarURL: u.AvatarURL, Company: u.Company}
	if out.Email == "" {
		// A private address is not in /user; /user/emails has it when the token may read it.
		var emails []struct {
			Email    string `json:"email"`
			Primary  bool   `json:"primary"`
			Verified bool   `json:"verified"`
		}
		if _, err := c.get(ctx, "/user/emails", nil, &emails); err == nil {
			for _, e := range emails {
				if e.Primary && e.Verified {
					out.Email = e.Email
				}
			}
		}
	}
	if out.Email == "" {
		// GitHub attributes commits from its no-reply address to the account.
		out.Email = fmt.Sprintf("%d+%s@users.noreply.%s", u.ID, u.Login, strings.TrimPrefix(c.base.Hostname(), "api."))
	}
	return out, nil
}

type ghRepo struct {
	ID            int64      `json:"id"`
	FullName      string     `json:"full_name"`
	Private       bool       `json:"private"`
	DefaultBranch string     `json:"default_branch"`
	CloneURL      string     `json:"clone_url"`
	HTMLURL       string     `json:"html_url"`
	Stars         int        `json:"stargazers_count"`
	PushedAt      *time.Time `json:"pushed_at"`
	Owner         struct {
		Type string `json:"type"`
	} `json:"owner"`
}

func (r ghRepo) repository() Repository {
	owner := "user"
	if r.Owner.Type == "Organization" {
		owner = "organization"
	}
	return Repository{ID: strconv.FormatInt(r.ID, 10), FullName: r.FullName, Private: r.Private,
		DefaultBranch: r.DefaultBranch, CloneURL: r.CloneURL, WebURL: r.HTMLURL, Stars: r.Stars,
		PushedAt: r.PushedAt, OwnerType: owner}
}

// repoPath is /repos/owner/name.
func (c *github) repoPath(name string) (string, error) {
	segs, err := repoSegments(c.provider, FamilyGitHub, name)
	if err != nil {
		return "", err
	}
	return "/repos/" + escapeSegments(segs, "/"), nil
}

func (c *github) Repository(ctx context.Context, name string) (Repository, error) {
	p, err := c.repoPath(name)
	if err != nil {
		return Repository{}, err
	}
	var r ghRepo
	if _, err := c.get(ctx, p, nil, &r); err != nil {
		return Repository{}, err
	}
	return r.repository(), nil
}

func pageQuery(page, perPage int) url.Values {
	return url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)}}
}

func (c *github) Repositories(ctx context.Context, page, perPage int) (Page[Repository], error) {
	q := pageQuery(page, perPage)
	q.Set("sort", "pushed")
	var repos []ghRepo
	h, err := c.get(ctx, "/user/repos", q, &repos)
	if err != nil {
		return Page[Repository]{}, err
	}
	out := Page[Repository]{HasNext: hasNextLink(h)}
	for _, r := range repos {
		out.Items = append(out.Items, r.repository())
	}
	return out, nil
}

func (c *github) Branches(ctx context.Context, repo string, page, perPage int) (Page[Branch], error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return Page[Branch]{}, err
	}
	var branches []struct {
		Name   string `json:"name"`
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
		Protected bool `json:"protected"`
	}
	h, err := c.get(ctx, p+"/branches", pageQuery(page, perPage), &branches)
	if err != nil {
		return Page[Branch]{}, err
	}
	out := Page[Branch]{HasNext: hasNextLink(h)}
	for _, b := range branches {
		out.Items = append(out.Items, Branch{Name: b.Name, CommitSHA: b.Commit.SHA, Protected: b.Protected})
	}
	return out, nil
}

type ghIssue struct {
	Number      int       `json:"number"`
	Title       string    `json:"title"`
	Body        string    `json:"body"`
	State       string    `json:"state"`
	HTMLURL     string    `json:"html_url"`
	User        ghUser    `json:"user"`
	PullRequest *struct{} `json:"pull_request"`
	Repository  *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	RepositoryURL string `json:"repository_url"`
}

// repoName is the issue's repository, from the repository object when the listing has one,
// else from repository_url (…/repos/owner/name).
func (i ghIssue) repoName() string {
	if i.Repository != nil && i.Repository.FullName != "" {
		return i.Repository.FullName
	}
	if _, after, ok := strings.Cut(i.RepositoryURL, "/repos/"); ok {
		return after
	}
	return ""
}

func (c *github) AssignedIssues(ctx context.Context) ([]Issue, error) {
	var issues []ghIssue
	q := url.Values{"filter": {"assigned"}, "state": {"open"}, "per_page": {"100"}}
	if _, err := c.get(ctx, "/issues", q, &issues); err != nil {
		return nil, err
	}
	var out []Issue
	for _, i := range issues {
		if i.PullRequest != nil {
			continue // the listing holds pull requests too
		}
		out = append(out, Issue{Repository: i.repoName(), Number: i.Number, Title: i.Title, State: i.State, Author: i.User.Login, URL: i.HTMLURL})
	}
	return out, nil
}

// maxTaskPullRequests bounds the pull requests looked at for suggested tasks: each costs
// several calls.
const maxTaskPullRequests = 30

func (c *github) OpenPullRequests(ctx context.Context) ([]PullRequestStatus, error) {
	me, err := c.User(ctx)
	if err != nil {
		return nil, err
	}
	var found struct {
		Items []ghIssue `json:"items"`
	}
	q := url.Values{"q": {"is:pr is:open archived:false author:" + me.Login}, "sort": {"updated"},
		"per_page": {strconv.Itoa(maxTaskPullRequests)}}
	if _, err := c.get(ctx, "/search/issues", q, &found); err != nil {
		return nil, err
	}
	return eachLimited(ctx, found.Items, func(ctx context.Context, i ghIssue) (PullRequestStatus, error) {
		pr, err := c.pullState(ctx, i.repoName(), i.Number)
		if err != nil {
			return PullRequestStatus{}, err
		}
		st := PullRequestStatus{Repository: pr.Repository, Number: pr.Number, Title: pr.Title, Conflicts: pr.Conflicts,
			FailingChecks: anyCheck(pr.Checks, CheckFailure)}
		for _, r := range pr.Reviews {
			// As OpenHands: a review asking for changes or leaving comments awaits an answer.
			st.UnresolvedComments = st.UnresolvedComments || r.State == ReviewChangesRequested || r.State == ReviewCommented
		}
		return st, nil
	})
}

func (c *github) Issue(ctx context.Context, repo string, number int) (Issue, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return Issue{}, err
	}
	var i ghIssue
	if _, err := c.get(ctx, fmt.Sprintf("%s/issues/%d", p, number), nil, &i); err != nil {
		return Issue{}, err
	}
	out := Issue{Repository: repo, Number: i.Number, Title: i.Title, Body: i.Body, State: i.State, Author: i.User.Login, URL: i.HTMLURL}
	if out.Comments, err = c.comments(ctx, fmt.Sprintf("%s/issues/%d/comments", p, number)); err != nil {
		return Issue{}, err
	}
	return out, nil
}

type ghComment struct {
	User      ghUser     `json:"user"`
	Body      string     `json:"body"`
	Path      string     `json:"path"`
	Line      int        `json:"line"`
	CreatedAt *time.Time `json:"created_at"`
}

// maxCommentPages bounds how many pages of 100 comments are read.
const maxCommentPages = 5

func (c *github) comments(ctx context.Context, path string) ([]Comment, error) {
	var out []Comment
	for page := 1; page <= maxCommentPages; page++ {
		var cs []ghComment
		h, err := c.get(ctx, path, pageQuery(page, 100), &cs)
		if err != nil {
			return nil, err
		}
		for _, cm := range cs {
			out = append(out, Comment{Author: cm.User.Login, Body: cm.Body, Path: cm.Path, Line: cm.Line, CreatedAt: cm.CreatedAt})
		}
		if !hasNextLink(h) {
			break
		}
	}
	return out, nil
}

type ghPull struct {
	Number         int        `json:"number"`
	Title          string     `json:"title"`
	Body           string     `json:"body"`
	State          string     `json:"state"`
	HTMLURL        string     `json:"html_url"`
	User           ghUser     `json:"user"`
	MergedAt       *time.Time `json:"merged_at"`
	Mergeable      *bool      `json:"mergeable"`
	MergeableState string     `json:"mergeable_state"`
	Head           struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p ghPull) pullRequest(repo string) PullRequest {
	state := p.State
	if p.MergedAt != nil {
		state = "merged"
	}
	return PullRequest{Repository: repo, Number: p.Number, Title: p.Title, Body: p.Body, State: state,
		Author: p.User.Login, URL: p.HTMLURL, Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA,
		Conflicts: p.MergeableState == "dirty" || p.Mergeable != nil && !*p.Mergeable}
}

// pullState reads a pull request with its checks and reviews, without comments.
func (c *github) pullState(ctx context.Context, repo string, number int) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	var pull ghPull
	if _, err := c.get(ctx, fmt.Sprintf("%s/pulls/%d", p, number), nil, &pull); err != nil {
		return PullRequest{}, err
	}
	out := pull.pullRequest(repo)
	if out.Checks, err = c.checks(ctx, p, out.HeadSHA); err != nil {
		return PullRequest{}, err
	}
	var reviews []struct {
		User  ghUser `json:"user"`
		State string `json:"state"`
		Body  string `json:"body"`
	}
	if _, err := c.get(ctx, fmt.Sprintf("%s/pulls/%d/reviews", p, number), pageQuery(1, 100), &reviews); err != nil {
		return PullRequest{}, err
	}
	for _, r := range reviews {
		state := map[string]string{"APPROVED": ReviewApproved, "CHANGES_REQUESTED": ReviewChangesRequested, "COMMENTED": ReviewCommented}[r.State]
		if state != "" { // dismissed and pending reviews say nothing now
			out.Reviews = append(out.Reviews, Review{Author: r.User.Login, State: state, Body: r.Body})
		}
	}
	return out, nil
}

// checks gathers both kinds of CI result GitHub keeps: check runs (Actions and apps) and
// commit statuses (older integrations).
func (c *github) checks(ctx context.Context, repoPath, sha string) ([]Check, error) {
	if sha == "" {
		return nil, nil
	}
	var runs struct {
		CheckRuns []struct {
			Name       string `json:"name"`
			Status     string `json:"status"`
			Conclusion string `json:"conclusion"`
			HTMLURL    string `json:"html_url"`
		} `json:"check_runs"`
	}
	sha = url.PathEscape(sha)
	if _, err := c.get(ctx, repoPath+"/commits/"+sha+"/check-runs", pageQuery(1, 100), &runs); err != nil {
		return nil, err
	}
	var out []Check
	for _, r := range runs.CheckRuns {
		state := CheckPending
		if r.Status == "completed" {
			switch r.Conclusion {
			case "success", "neutral", "skipped":
				state = CheckSuccess
			default: // failure, timed_out, cancelled, action_required, startup_failure, stale
				state = CheckFailure
			}
		}
		out = append(out, Check{Name: r.Name, State: state, URL: r.HTMLURL})
	}
	var combined struct {
		Statuses []struct {
			Context   string `json:"context"`
			State     string `json:"state"`
			TargetURL string `json:"target_url"`
		} `json:"statuses"`
	}
	if _, err := c.get(ctx, repoPath+"/commits/"+sha+"/status", nil, &combined); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	for _, s := range combined.Statuses {
		state := map[string]string{"success": CheckSuccess, "failure": CheckFailure, "error": CheckFailure}[s.State]
		if state == "" {
			state = CheckPending
		}
		out = append(out, Check{Name: s.Context, State: state, URL: s.TargetURL})
	}
	return out, nil
}

func (c *github) PullRequest(ctx context.Context, repo string, number int) (PullRequest, error) {
	out, err := c.pullState(ctx, repo, number)
	if err != nil {
		return PullRequest{}, err
	}
	p, _ := c.repoPath(repo)
	if out.Comments, err = c.comments(ctx, fmt.Sprintf("%s/issues/%d/comments", p, number)); err != nil {
		return PullRequest{}, err
	}
	review, err := c.comments(ctx, fmt.Sprintf("%s/pulls/%d/comments", p, number))
	if err != nil {
		return PullRequest{}, err
	}
	out.Comments = append(out.Comments, review...)
	return out, nil
}

func (c *github) CreatePullRequest(ctx context.Context, repo string, pr NewPullRequest) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	body := map[string]any{"title": pr.Title, "body": pr.Body, "head": pr.Head, "base": pr.Base, "draft": pr.Draft}
	var created ghPull
	if _, err := c.request(ctx, http.MethodPost, p+"/pulls", nil, body, &created); err != nil {
		return PullRequest{}, err
	}
	return created.pullRequest(repo), nil
}

// hasNextLink says whether a Link header (RFC 8288, as GitHub and GitLab send it) has a
// rel="next" link.
func hasNextLink(h http.Header) bool {
	for _, v := range h.Values("Link") {
		for _, link := range strings.Split(v, ",") {
			for _, param := range strings.Split(link, ";")[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				if strings.EqualFold(k, "rel") && strings.Contains(" "+strings.Trim(val, `"`)+" ", " next ") {
					return true
				}
			}
		}
	}
	return false
}

func anyCheck(checks []Check, state string) bool {
	for _, c := range checks {
		if c.State == state {
			return true
		}
	}
	return false
}
