// Package apiclient is a small typed client of agentd's public HTTP API and its event
// socket, with the API's own wire types (internal/apitypes). The CLI is built on it; it holds
// no server code: everything it knows it learns over HTTP.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one agentd server with one API key. Safe for concurrent use.
type Client struct {
	base      *url.URL
	key       string
	hc        *http.Client
	userAgent string
}

// Options tune a Client; the zero value is fine.
type Options struct {
	// HTTP is the client requests go through; nil means one with a 60 s timeout per request
	// (streams are not bounded by it).
	HTTP *http.Client
	// UserAgent is sent with every request.
	UserAgent string
}

// New returns a client of the server at baseURL (http or https, with or without a path
// prefix) that authenticates with key.
func New(baseURL, key string, o Options) (*Client, error) {
	u, err := ParseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 60 * time.Second}
	}
	if o.UserAgent == "" {
		o.UserAgent = "agentd-cli"
	}
	return &Client{base: u, key: key, hc: o.HTTP, userAgent: o.UserAgent}, nil
}

// ParseURL checks a server URL: http or https, a host, no query.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://host[:port]", raw)
	}
	return u, nil
}

// BaseURL is the server's URL as the client uses it.
func (c *Client) BaseURL() string { return c.base.String() }

// Error is an answer other than 2xx: its status and what the server said.
type Error struct {
	Method, Path string
	Status       int
	// Detail is the server's detail text; for a validation error (422) its problems, one per
	// line, each with its location.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Detail)
}

// StatusOf is the HTTP status of err's *Error, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// problem is one entry of a FastAPI validation answer.
type problem struct {
	Loc []any  `json:"loc"`
	Msg string `json:"msg"`
}

// detailOf reads the detail of an error answer: a string, or FastAPI's list of problems.
func detailOf(body []byte) string {
	var d struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &d) != nil || len(d.Detail) == 0 {
		return strings.TrimSpace(string(body[:min(len(body), 500)]))
	}
	var s string
	if json.Unmarshal(d.Detail, &s) == nil {
		return s
	}
	var ps []problem
	if json.Unmarshal(d.Detail, &ps) == nil {
		lines := make([]string, len(ps))
		for i, p := range ps {
			loc := make([]string, len(p.Loc))
			for j, l := range p.Loc {
				loc[j] = fmt.Sprint(l)
			}
			lines[i] = strings.Join(loc, ".") + ": " + p.Msg
		}
		return strings.Join(lines, "\n")
	}
	return string(d.Detail)
}

// url is the absolute URL of path (which may carry a query) under the base.
func (c *Client) url(path string, q url.Values) string {
	u := *c.base
	p, rawQuery, _ := strings.Cut(path, "?")
	u.Path = strings.TrimRight(c.base.Path, "/") + p
	u.RawPath = ""
	if enc := q.Encode(); enc != "" {
		rawQuery = enc
	}
	u.RawQuery = rawQuery
	return u.String()
}

// Do sends a request with body (JSON, if not nil) and decodes a 2xx answer into out (if not
// nil). Any other answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base.Redacted()+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Detail: detailOf(data)}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what this client expects: %w", method, path, err)
	}
	return nil
}
