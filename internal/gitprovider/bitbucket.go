package gitprovider

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// bitbucket speaks the REST API (2.0) of Bitbucket Cloud. A repository is workspace/slug.
type bitbucket struct{ *rest }

func (c *bitbucket) Family() string { return FamilyBitbucket }

type bbUser struct {
	UUID        string `json:"uuid"`
	AccountID   string `json:"account_id"`
	Nickname    string `json:"nickname"`
	Username    string `json:"username"`
	DisplayName string `json:"display_name"`
	Links       struct {
		Avatar struct {
			Href string `json:"href"`
		} `json:"avatar"`
	} `json:"links"`
}

func (u bbUser) login() string { return firstNonEmpty(u.Nickname, u.Username, u.DisplayName) }

func (c *bitbucket) User(ctx context.Context) (User, error) {
	var u bbUser
	if _, err := c.get(ctx, "/user", nil, &u); err != nil {
		return User{}, err
	}
	out := User{ID: u.UUID, Login: u.login(), Name: u.DisplayName, AvatarURL: u.Links.Avatar.Href}
	// The address needs the account:email scope; without it the author has no e-mail.
	var emails struct {
		Values []struct {
			Email       string `json:"email"`
			IsPrimary   bool   `json:"is_primary"`
			IsConfirmed bool   `json:"is_confirmed"`
		} `json:"values"`
	}
	if _, err := c.get(ctx, "/user/emails", nil, &emails); err == nil {
		for _, e := range emails.Values {
			if e.IsPrimary && e.IsConfirmed {
				out.Email = e.Email
			}
		}
	}
	return out, nil
}

// repoPath is /repositories/workspace/slug.
func (c *bitbucket) repoPath(name string) (string, error) {
	segs, err := repoSegments(c.provider, FamilyBitbucket, name)
	if err != nil {
		return "", err
	}
	return "/repositories/" + escapeSegments(segs, "/"), nil
}

type bbLink struct {
	Name string `json:"name"`
	Href string `json:"href"`
}

type bbRepo struct {
	UUID       string `json:"uuid"`
	FullName   string `json:"full_name"`
	IsPrivate  bool   `json:"is_private"`
	MainBranch *struct {
		Name string `json:"name"`
	} `json:"mainbranch"`
	UpdatedOn *time.Time `json:"updated_on"`
	Owner     struct {
		Type string `json:"type"`
	} `json:"owner"`
	Links struct {
		Clone []bbLink `json:"clone"`
		HTML  struct {
			Href string `json:"href"`
		} `json:"html"`
	} `json:"links"`
}

func (r bbRepo) repository() Repository {
	out := Repository{ID: r.UUID, FullName: r.FullName, Private: r.IsPrivate, WebURL: r.Links.HTML.Href,
		PushedAt: r.UpdatedOn, OwnerType: "user"}
	if r.Owner.Type == "team" {
		out.OwnerType = "organization"
	}
	if r.MainBranch != nil {
		out.DefaultBranch = r.MainBranch.Name
	}
	for _, l := range r.Links.Clone {
		if l.Name == "https" {
			out.CloneURL = l.Href
		}
	}
	return out
}

func (c *bitbucket) Repository(ctx context.Context, name string) (Repository, error) {
	p, err := c.repoPath(name)
	if err != nil {
		return Repository{}, err
	}
	var r bbRepo
	if _, err := c.get(ctx, p, nil, &r); err != nil {
		return Repository{}, err
	}
	return r.repository(), nil
}

// bbPage is Bitbucket Cloud's paged answer.
type bbPage[T any] struct {
	Values []T    `json:"values"`
	Next   string `json:"next"`
	Size   *int   `json:"size"`
}

func bbQuery(page, perPage int) url.Values {
	return url.Values{"page": {strconv.Itoa(page)}, "pagelen": {strconv.Itoa(perPage)}}
}

func (c *bitbucket) Repositories(ctx context.Context, page, perPage int) (Page[Repository], error) {
	q := bbQuery(page, perPage)
	q.Set("role", "member")
	q.Set("sort", "-updated_on")
	var repos bbPage[bbRepo]
	if _, err := c.get(ctx, "/repositories", q, &repos); err != nil {
		return Page[Repository]{}, err
	}
	out := Page[Repository]{HasNext: repos.Next != "", Total: repos.Size}
	for _, r := range repos.Values {
		out.Items = append(out.Items, r.repository())
	}
	return out, nil
}

func (c *bitbucket) Branches(ctx context.Context, repo string, page, perPage int) (Page[Branch], error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return Page[Branch]{}, err
	}
	var branches bbPage[struct {
		Name   string `json:"name"`
		Target struct {
			Hash string     `json:"hash"`
			Date *time.Time `json:"date"`
		} `json:"target"`
	}]
	if _, err := c.get(ctx, p+"/refs/branches", bbQuery(page, perPage), &branches); err != nil {
		return Page[Branch]{}, err
	}
	out := Page[Branch]{HasNext: branches.Next != "", Total: branches.Size}
	for _, b := range branches.Values {
		out.Items = append(out.Items, Branch{Name: b.Name, CommitSHA: b.Target.Hash, LastPush: b.Target.Date})
	}
	return out, nil
}

// AssignedIssues finds nothing: Bitbucket Cloud's issue trackers are per repository, with no
// listing of a user's issues across them.
func (c *bitbucket) AssignedIssues(ctx context.Context) ([]Issue, error) { return nil, nil }

type bbPull struct {
	ID          int    `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	State       string `json:"state"`
	Author      bbUser `json:"author"`
	Source      struct {
		Branch struct {
			Name string `json:"name"`
		} `json:"branch"`
		Commit struct {
			Hash string `json:"hash"`
		} `json:"commit"`
	} `json:"source"`
	Destination struct {
		Branch struct {
			Name string `json:"name"`
		} `json:"branch"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	} `json:"destination"`
	Participants []struct {
		User     bbUser `json:"user"`
		Approved bool   `json:"approved"`
		State    string `json:"state"`
	} `json:"participants"`
	Links struct {
		HTML struct {
			Href string `json:"href"`
		} `json:"html"`
	} `json:"links"`
}

func (p bbPull) pullRequest(repo string) PullRequest {
	state := map[string]string{"OPEN": "open", "MERGED": "merged"}[p.State]
	if state == "" {
		state = "closed" // declined or superseded
	}
	out := PullRequest{Repository: repo, Number: p.ID, Title: p.Title, Body: p.Description, State: state,
		Author: p.Author.login(), URL: p.Links.HTML.Href, Head: p.Source.Branch.Name, Base: p.Destination.Branch.Name,
		HeadSHA: p.Source.Commit.Hash}
	for _, pt := range p.Participants {
		switch {
		case pt.State == "changes_requested":
			out.Reviews = append(out.Reviews, Review{Author: pt.User.login(), State: ReviewChangesRequested})
		case pt.Approved:
			out.Reviews = append(out.Reviews, Review{Author: pt.User.login(), State: ReviewApproved})
		}
	}
	return out
}

func (c *bitbucket) OpenPullRequests(ctx context.Context) ([]PullRequestStatus, error) {
	me, err := c.User(ctx)
	if err != nil {
		return nil, err
	}
	var pulls bbPage[bbPull]
	q := url.Values{"state": {"OPEN"}, "pagelen": {strconv.Itoa(maxTaskPullRequests)}}
	if _, err := c.get(ctx, "/pullrequests/"+url.PathEscape(me.ID), q, &pulls); err != nil {
		return nil, err
	}
	return eachLimited(ctx, pulls.Values, func(ctx context.Context, listed bbPull) (PullRequestStatus, error) {
		repo := listed.Destination.Repository.FullName
		pr, err := c.pullState(ctx, repo, listed.ID)
		if err != nil {
			return PullRequestStatus{}, err
		}
		st := PullRequestStatus{Repository: repo, Number: pr.Number, Title: pr.Title, Conflicts: pr.Conflicts,
			FailingChecks: anyCheck(pr.Checks, CheckFailure)}
		for _, r := range pr.Reviews {
			st.UnresolvedComments = st.UnresolvedComments || r.State == ReviewChangesRequested
		}
		return st, nil
	})
}

// pullState reads a pull request with its checks, reviews and conflicts, without comments.
func (c *bitbucket) pullState(ctx context.Context, repo string, id int) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	pp := fmt.Sprintf("%s/pullrequests/%d", p, id)
	var pull bbPull
	if _, err := c.get(ctx, pp, nil, &pull); err != nil {
		return PullRequest{}, err
	}
	out := pull.pullRequest(repo)
	var statuses bbPage[struct {
		Key   string `json:"key"`
		Name  string `json:"name"`
		State string `json:"state"`
		URL   string `json:"url"`
	}]
	if _, err := c.get(ctx, pp+"/statuses", bbQuery(1, 100), &statuses); err != nil {
		return PullRequest{}, err
	}
	for _, s := range statuses.Values {
		state := map[string]string{"SUCCESSFUL": CheckSuccess, "FAILED": CheckFailure, "STOPPED": CheckFailure}[s.State]
		if state == "" {
			state = CheckPending
		}
		out.Checks = append(out.Checks, Check{Name: firstNonEmpty(s.Name, s.Key), State: state, URL: s.URL})
	}
	// Conflicts show only in the diff: files whose status is a conflict.
	var diffstat bbPage[struct {
		Status string `json:"status"`
	}]
	if _, err := c.get(ctx, pp+"/diffstat", bbQuery(1, 100), &diffstat); err != nil {
		return PullRequest{}, err
	}
	for _, d := range diffstat.Values {
		switch d.Status {
		case "merge conflict", "local deleted", "remote deleted":
			out.Conflicts = true
		}
	}
	return out, nil
}

type bbComment struct {
	Content struct {
		Raw string `json:"raw"`
	} `json:"content"`
	User      bbUser     `json:"user"`
	CreatedOn *time.Time `json:"created_on"`
	Deleted   bool       `json:"deleted"`
	Inline    *struct {
		Path string `json:"path"`
		To   *int   `json:"to"`
	} `json:"inline"`
	Resolution *struct{} `json:"resolution"`
}

func (c *bitbucket) comments(ctx context.Context, path string) ([]Comment, error) {
	var out []Comment
	for page := 1; page <= maxCommentPages; page++ {
		var cs bbPage[bbComment]
		if _, err := c.get(ctx, path, bbQuery(page, 100), &cs); err != nil {
			return nil, err
		}
		for _, cm := range cs.Values {
			if cm.Deleted {
				continue
			}
			o := Comment{Author: cm.User.login(), Body: cm.Content.Raw, CreatedAt: cm.CreatedOn}
			if cm.Inline != nil {
				resolved := cm.Resolution != nil
				o.Path, o.Resolved = cm.Inline.Path, &resolved
				if cm.Inline.To != nil {
					o.Line = *cm.Inline.To
				}
			}
			out = append(out, o)
		}
		if cs.Next == "" {
			break
		}
	}
	return out, nil
}

func (c *bitbucket) Issue(ctx context.Context, repo string, number int) (Issue, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return Issue{}, err
	}
	var i struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		State   string `json:"state"`
		Content struct {
			Raw string `json:"raw"`
		} `json:"content"`
		Reporter bbUser `json:"reporter"`
		Links    struct {
			HTML struct {
				Href string `json:"href"`
			} `json:"html"`
		} `json:"links"`
	}
	ip := fmt.Sprintf("%s/issues/%d", p, number)
	if _, err := c.get(ctx, ip, nil, &i); err != nil {
		return Issue{}, err
	}
	out := Issue{Repository: repo, Number: i.ID, Title: i.Title, Body: i.Content.Raw, State: i.State,
		Author: i.Reporter.login(), URL: i.Links.HTML.Href}
	if out.Comments, err = c.comments(ctx, ip+"/comments"); err != nil {
		return Issue{}, err
	}
	return out, nil
}

func (c *bitbucket) PullRequest(ctx context.Context, repo string, number int) (PullRequest, error) {
	out, err := c.pullState(ctx, repo, number)
	if err != nil {
		return PullRequest{}, err
	}
	p, _ := c.repoPath(repo)
	if out.Comments, err = c.comments(ctx, fmt.Sprintf("%s/pullrequests/%d/comments", p, number)); err != nil {
		return PullRequest{}, err
	}
	return out, nil
}

func (c *bitbucket) CreatePullRequest(ctx context.Context, repo string, pr NewPullRequest) (PullRequest, error) {
	p, err := c.repoPath(repo)
	if err != nil {
		return PullRequest{}, err
	}
	body := map[string]any{"title": pr.Title, "description": pr.Body, "draft": pr.Draft,
		"source":      map[string]any{"branch": map[string]string{"name": pr.Head}},
		"destination": map[string]any{"branch": map[string]string{"name": pr.Base}}}
	var created bbPull
	if _, err := c.request(ctx, http.MethodPost, p+"/pullrequests", nil, body, &created); err != nil {
		return PullRequest{}, err
	}
	return created.pullRequest(repo), nil
}
