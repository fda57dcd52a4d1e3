package gitprovider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
)

// A probe recognises one family's API at a server's root: a resource only that API has,
// answered either with its content or with that API's own refusal of the token (which then
// fails the token check with the right message, rather than "no API here").
type probe struct {
	family string
	path   string
	// ok is the answer's shape when the API serves the resource; refused its shape when it
	// refuses the token.
	ok, refused []string
}

var probes = []probe{
	// GitHub Enterprise Server's meta, which every version serves.
	{FamilyGitHub, "/api/v3/meta", []string{"verifiable_password_authentication"}, []string{"message", "documentation_url"}},
	// GitLab's version needs a token; a bad one is refused as {"message": "401 Unauthorized"}.
	{FamilyGitLab, "/api/v4/version", []string{"version", "revision"}, []string{"message"}},
	// Bitbucket Data Center's application properties are public.
	{FamilyBitbucketDC, "/rest/api/1.0/application-properties", []string{"version", "displayName"}, []string{"errors"}},
}

func (p probe) matches(status int, body []byte) bool {
	var keys []string
	switch status {
	case http.StatusOK:
		keys = p.ok
	case http.StatusUnauthorized:
		keys = p.refused
	default:
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

// maxRemembered bounds the hosts whose family is remembered.
const maxRemembered = 1024

// families remembers which API family each enterprise host speaks, for the life of the
// process: a server does not change its API, and probing costs up to three requests. A host
// found when maxRemembered are remembered takes the place of one of them, at random, so
// that hosts seen once (a user can name any server) never keep the others out for good; a
// host put out is probed again when next used.
type families struct {
	mu sync.Mutex
	m  map[string]string // host root URL → family
}

func (f *families) get(root string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fam, ok := f.m[root]
	return fam, ok
}

func (f *families) put(root, family string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]string{}
	}
	if _, ok := f.m[root]; !ok && len(f.m) >= maxRemembered {
		for other := range f.m { // Go's map order: a host at random
			delete(f.m, other)
			break
		}
	}
	f.m[root] = family
}

// detect finds the API family of the enterprise server at root by probing each family's
// resource in turn with the user's token.
func (s *Service) detect(ctx context.Context, provider string, root *url.URL, token string, hc *http.Client) (endpoint, error) {
	key := root.String()
	if fam, ok := s.families.get(key); ok {
		return endpoint{family: fam, base: apiBase(root, fam)}, nil
	}
	for _, p := range probes {
		r := &rest{provider: provider, base: root, http: hc, auth: restAuth(p.family, token)}
		status, body, err := r.probe(ctx, p.path)
		if err != nil {
			return endpoint{}, err
		}
		if p.matches(status, body) {
			s.families.put(key, p.family)
			return endpoint{family: p.family, base: apiBase(root, p.family)}, nil
		}
	}
	return endpoint{}, newError(provider, ErrBadHost, nil,
		"The %s host %s serves none of the GitHub Enterprise, GitLab or Bitbucket Data Center APIs", provider, root.Redacted())
}
