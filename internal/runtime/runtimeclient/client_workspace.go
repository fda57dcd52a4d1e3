package runtimeclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Workspace routes of the runtime, for Client.Workspace.
const (
	RouteFileList     = "/api/file/list"
	RouteFileTree     = "/api/file/tree"
	RouteFileDownload = "/api/file/download"
	RouteFileServe    = "/api/file/serve"
	RouteFileUpload   = "/api/file/upload"
	RouteFileArchive  = "/api/file/archive"
	RouteGitChanges   = "/api/git/changes"
	RouteGitDiff      = "/api/git/diff"
)

// workspaceRequestHeaders are the client's headers a workspace request carries on: ranges and
// conditions of a download, the type of an upload's body.
var workspaceRequestHeaders = []string{
	"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "Content-Type",
}

// HeaderMaxUpload carries the control plane's bound on an uploaded file, which the runtime
// applies when it is below its own.
const HeaderMaxUpload = "X-Agentd-Max-Upload-Bytes"

// WorkspaceRequest is a client's request to a workspace route, relayed.
type WorkspaceRequest struct {
	Method string
	// Route is one of the Route* constants.
	Route string
	Query url.Values
	// Header holds the client's headers; only those a workspace route reads are sent on.
	Header http.Header
	// Body is the upload's body, Size its length or -1 when unknown.
	Body io.Reader
	Size int64
	// MaxUploadBytes, when positive, bounds an uploaded file.
	MaxUploadBytes int64
}

// Workspace sends a request to one of the runtime's workspace routes (or bash routes) and returns the
// runtime's answer unread: its status, its headers and its body are what the client is to
// get, files and archives streamed. The caller closes the body.
func (c *Client) Workspace(ctx context.Context, wr WorkspaceRequest) (*http.Response, error) {
	if !strings.HasPrefix(wr.Route, "/api/file/") && !strings.HasPrefix(wr.Route, "/api/git/") && !strings.HasPrefix(wr.Route, "/api/bash/") {
		return nil, fmt.Errorf("runtime workspace: %s is not a workspace route", wr.Route)
	}
	path := wr.Route
	if len(wr.Query) > 0 {
		path += "?" + wr.Query.Encode()
	}
	req, err := c.NewRequest(ctx, wr.Method, path, wr.Body)
	if err != nil {
		return nil, err
	}
	if wr.Body != nil {
		req.ContentLength = wr.Size
	}
	for _, h := range workspaceRequestHeaders {
		if v := wr.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	if wr.MaxUploadBytes > 0 {
		req.Header.Set(HeaderMaxUpload, strconv.FormatInt(wr.MaxUploadBytes, 10))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("runtime workspace %s: %w", wr.Route, err)
	}
	return resp, nil
}
