package gitprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/netpolicy"
)

// callTimeout bounds one call to a provider, so that a provider that hangs fails the request
// that waits for it rather than holding it open.
const callTimeout = 30 * time.Second

// maxBody bounds what is read of one provider answer: listings are paged, so a larger body
// is not a provider's API.
const maxBody = 8 << 20

// rest is the JSON-over-HTTP layer the four families share: one account's base URL, its
// Authorization header and the user's policy client.
type rest struct {
	provider string // the user's name for the provider, for messages
	base     *url.URL
	http     *http.Client
	auth     string // the Authorization header value; it goes nowhere else
}

// request sends method to path (already escaped, relative to the base) with query and a
// JSON body, and decodes a 2xx answer into out (when not nil). It returns the answer's
// headers, for paging.
func (c *rest) request(ctx context.Context, method, path string, query url.Values, body, out any) (http.Header, error) {
	u := c.url(path, query)
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s body: %w", path, err)
		}
		rd = bytes.NewReader(data)
	}
	resp, cancel, err := c.send(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, newError(c.provider, ErrUnavailable, err, "%s did not finish its answer", c.host())
	}
	if len(data) > maxBody {
		return nil, newError(c.provider, ErrUnavailable, nil, "%s answered more than %d MiB to %s", c.host(), maxBody>>20, c.what(method, path))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(resp, data, method, path)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, newError(c.provider, ErrUnavailable, err, "%s answered %s with something that is not the %s API", c.host(), c.what(method, path), c.provider)
		}
	}
	return resp.Header, nil
}

// probe GETs path and returns the status and the start of the body, whatever the status:
// detection reads refusals too.
func (c *rest) probe(ctx context.Context, path string) (int, []byte, error) {
	resp, cancel, err := c.send(ctx, http.MethodGet, c.url(path, nil), nil)
	if err != nil {
		return 0, nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, data, nil
}

func (c *rest) get(ctx context.Context, path string, query url.Values, out any) (http.Header, error) {
	return c.request(ctx, http.MethodGet, path, query, nil, out)
}

// send makes one request with the account's headers; body, when not nil, is JSON.
// The answer's body must be read before cancel is called: cancel ends the call.
func (c *rest) send(ctx context.Context, method string, u *url.URL, body io.Reader) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	resp, err := c.do(ctx, method, u, body)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

func (c *rest) do(ctx context.Context, method string, u *url.URL, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, newError(c.provider, ErrBadHost, err, "The %s address %s is not a usable URL", c.provider, c.base.Redacted())
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agentd")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	return resp, nil
}

func (c *rest) url(path string, query url.Values) *url.URL {
	u := *c.base
	u.RawPath = strings.TrimSuffix(c.base.EscapedPath(), "/") + path
	if p, err := url.PathUnescape(u.RawPath); err == nil {
		u.Path = p
	}
	u.RawQuery = query.Encode()
	return &u
}

func (c *rest) host() string { return c.base.Host }

// what names a request in messages: its method and the path below the API base.
func (c *rest) what(method, path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return method + " " + path
}

func (c *rest) transportError(err error) error {
	var refused *netpolicy.RefusedError
	if errors.As(err, &refused) {
		return newError(c.provider, ErrBadHost, refused, "The %s host %s", c.provider, refused.Explain(c.host()))
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return newError(c.provider, ErrUnavailable, err, "%s did not answer in time", c.host())
	}
	return newError(c.provider, ErrUnavailable, err, "%s could not be reached", c.host())
}

// statusError words a provider's refusal. The provider's own message is kept only for
// requests it rejected on their merits (a pull request that exists already), where it is
// what the user needs to know.
func (c *rest) statusError(resp *http.Response, body []byte, method, path string) error {
	status := resp.StatusCode
	what := c.what(method, path)
	switch {
	case status == http.StatusUnauthorized:
		return newError(c.provider, ErrTokenRefused, nil, "The %s token was refused by %s (HTTP 401)", c.provider, c.host())
	case status == http.StatusTooManyRequests || status == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0":
		return newError(c.provider, ErrUnavailable, nil, "%s's rate limit for the %s token is spent; try again later", c.host(), c.provider)
	case status == http.StatusForbidden:
		return newError(c.provider, ErrForbidden, nil, "The %s token may not %s at %s (HTTP 403)", c.provider, what, c.host())
	case status == http.StatusNotFound || status == http.StatusGone:
		return newError(c.provider, ErrNotFound, nil, "%s found nothing at %s, or the %s token may not see it (HTTP %d)", c.host(), what, c.provider, status)
	case status >= 400 && status < 500:
		msg := providerMessage(body)
		if msg == "" {
			msg = http.StatusText(status)
		}
		return newError(c.provider, ErrRejected, nil, "%s refused %s (HTTP %d): %s", c.host(), what, status, msg)
	}
	return newError(c.provider, ErrUnavailable, nil, "%s failed to answer %s (HTTP %d)", c.host(), what, status)
}

// providerMessage picks the human part of an error body in any family's shape: GitHub's
// message and errors[].message, GitLab's message (a string, a list or a map of lists),
// Bitbucket Cloud's error.message, Bitbucket Data Center's errors[].message.
func providerMessage(body []byte) string {
	var v struct {
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(flatten(v.Message))
	var bbError struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &bbError) == nil {
		add(bbError.Message)
	} else {
		add(flatten(v.Error))
	}
	for _, e := range v.Errors {
		add(e.Message)
	}
	msg := strings.Join(parts, "; ")
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// flatten turns a JSON string, list or object of strings into one line.
func flatten(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var out []string
		for _, item := range list {
			out = append(out, flatten(item))
		}
		return strings.Join(out, "; ")
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, k+": "+flatten(m[k]))
		}
		return strings.Join(out, "; ")
	}
	return ""
}
