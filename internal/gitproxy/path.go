package gitproxy

import (
	"errors"
	"net/url"
	"strings"
)

// Smart HTTP endpoints of a repository, the only ones the proxy serves.
const (
	infoRefs    = "/info/refs"
	uploadPack  = "/git-upload-pack"
	receivePack = "/git-receive-pack"
)

// Git services, as the service parameter of info/refs names them.
const (
	serviceUploadPack  = "git-upload-pack"
	serviceReceivePack = "git-receive-pack"
)

// target is what a request to the proxy asks for.
type target struct {
	Provider   string
	Repository string // owner/name, as the path spells it
	// Endpoint is one of infoRefs, uploadPack, receivePack.
	Endpoint string
	// Service is git-upload-pack (fetch, clone) or git-receive-pack (push).
	Service string
}

var errNotGit = errors.New("not a smart HTTP request for a repository")

// parseTarget reads /<provider>/<repository>.git/<endpoint> with the query git sends.
func parseTarget(path string, query url.Values) (target, error) {
	provider, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || provider == "" {
		return target{}, errNotGit
	}
	var t target
	for _, ep := range []string{infoRefs, uploadPack, receivePack} {
		if repo, ok := strings.CutSuffix(rest, ".git"+ep); ok {
			t = target{Provider: provider, Repository: repo, Endpoint: ep}
			break
		}
	}
	if t.Endpoint == "" || !validRepository(t.Repository) {
		return target{}, errNotGit
	}
	switch t.Endpoint {
	case infoRefs:
		t.Service = query.Get("service")
		if t.Service != serviceUploadPack && t.Service != serviceReceivePack {
			return target{}, errNotGit // the dumb protocol
		}
	case uploadPack:
		t.Service = serviceUploadPack
	case receivePack:
		t.Service = serviceReceivePack
	}
	return t, nil
}

// validRepository accepts owner/name with any number of groups before the name, and no
// empty, dot or dot-dot segment.
func validRepository(repo string) bool {
	segs := strings.Split(repo, "/")
	if len(segs) < 2 {
		return false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// Path is where git in a sandbox finds repository of provider behind the relay at base
// (http://127.0.0.1:PORT): base/<provider>/<repository>.git.
func Path(base, provider, repository string) string {
	return strings.TrimRight(base, "/") + "/" + provider + "/" + repository + ".git"
}
