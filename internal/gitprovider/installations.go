package gitprovider

import (
	"context"
	"errors"
	"strconv"
)

func (c *github) Installations(ctx context.Context, page, perPage int) (Page[string], error) {
	var body struct {
		TotalCount    int `json:"total_count"`
		Installations []struct {
			ID int64 `json:"id"`
		} `json:"installations"`
	}
	h, err := c.get(ctx, "/user/installations", pageQuery(page, perPage), &body)
	if errors.Is(err, ErrForbidden) {
		// GitHub lists installations only to GitHub App user tokens; another token has none
		// to use.
		return Page[string]{Items: []string{}}, nil
	}
	if err != nil {
		return Page[string]{}, err
	}
	out := Page[string]{Items: []string{}, HasNext: hasNextLink(h), Total: &body.TotalCount}
	for _, i := range body.Installations {
		out.Items = append(out.Items, strconv.FormatInt(i.ID, 10))
	}
	return out, nil
}

func (c *gitlab) Installations(ctx context.Context, page, perPage int) (Page[string], error) {
	return Page[string]{}, newError(c.provider, ErrUnsupported, nil, "GitLab has no installations or workspaces (%s lists repositories without them)", c.host())
}

func (c *bitbucket) Installations(ctx context.Context, page, perPage int) (Page[string], error) {
	var body bbPage[struct {
		Workspace struct {
			Slug string `json:"slug"`
		} `json:"workspace"`
	}]
	if _, err := c.get(ctx, "/user/permissions/workspaces", bbQuery(page, perPage), &body); err != nil {
		return Page[string]{}, err
	}
	out := Page[string]{Items: []string{}, HasNext: body.Next != "", Total: body.Size}
	for _, v := range body.Values {
		out.Items = append(out.Items, v.Workspace.Slug)
	}
	return out, nil
}

func (c *bitbucketDC) Installations(ctx context.Context, page, perPage int) (Page[string], error) {
	var body dcPage[struct {
		Key string `json:"key"`
	}]
	if _, err := c.get(ctx, "/projects", dcQuery(page, perPage), &body); err != nil {
		return Page[string]{}, err
	}
	out := Page[string]{Items: []string{}, HasNext: !body.IsLastPage}
	for _, v := range body.Values {
		out.Items = append(out.Items, v.Key)
	}
	return out, nil
}
