package gitprovider

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Endpoints are the API base URLs of the public providers: the server's configuration, used
// for every token stored without a host (or with the provider's public host).
type Endpoints struct {
	GitHub    string
	GitLab    string
	Bitbucket string // Bitbucket Cloud; a base ending in /rest/api/1.0 is a Data Center server
}

// DefaultEndpoints are the public providers' APIs.
var DefaultEndpoints = Endpoints{
	GitHub:    "https://api.github.com",
	GitLab:    "https://gitlab.com/api/v4",
	Bitbucket: "https://api.bitbucket.org/2.0",
}

// familyPath is where each family's API lives below a self-hosted server's root.
var familyPath = map[string]string{
	FamilyGitHub:      "/api/v3",
	FamilyGitLab:      "/api/v4",
	FamilyBitbucketDC: "/rest/api/1.0",
}

// publicHosts are the host names that mean a provider's public service, whose API is the
// configured one.
var publicHosts = map[string][]string{
	GitHub:    {"github.com", "www.github.com", "api.github.com"},
	GitLab:    {"gitlab.com", "www.gitlab.com"},
	Bitbucket: {"bitbucket.org", "www.bitbucket.org", "api.bitbucket.org"},
}

// endpoint is where one account's API lives and which dialect it speaks.
type endpoint struct {
	family string
	base   *url.URL
}

// maxHostLen bounds a provider host as a user writes it: far longer than any server's root
// URL, and short enough that a host is never a burden to store or remember (families).
const maxHostLen = 2048

// parseHost reads a provider host as users write it: a name with an optional port
// (github.example.com, git.corp:8443), which means https, or an http(s) URL, which may add
// a path prefix (https://corp.example/gitlab). It returns the server's root URL.
func parseHost(host string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if len(host) > maxHostLen {
		return nil, fmt.Errorf("host is %d bytes long; a host is at most %d", len(host), maxHostLen)
	}
	raw := host
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	// The host is quoted back only once it is known to carry no credentials.
	switch {
	case err != nil:
		return nil, fmt.Errorf("host is neither a host name nor an http(s) URL")
	case u.User != nil:
		return nil, fmt.Errorf("host %q carries credentials; send the token as the token", u.Redacted())
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("host %q: want https:// or http://", host)
	case u.Hostname() == "":
		return nil, fmt.Errorf("host %q names no host", host)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("host %q: a query or fragment has no place in a host", host)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// isPublicHost says whether root is the provider's public service.
func isPublicHost(provider string, root *url.URL) bool {
	if root.Scheme != "https" || root.Path != "" || root.Port() != "" && root.Port() != "443" {
		return false
	}
	for _, h := range publicHosts[provider] {
		if strings.EqualFold(root.Hostname(), h) {
			return true
		}
	}
	return false
}

// configured returns the server's API for a public provider.
func (e Endpoints) configured(provider string) (endpoint, error) {
	raw, family := "", provider
	switch provider {
	case GitHub:
		raw = e.GitHub
	case GitLab:
		raw = e.GitLab
	case Bitbucket:
		raw = e.Bitbucket
	default:
		return endpoint{}, newError(provider, ErrBadHost, nil, "The %s provider needs a host: the address of its server", provider)
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || base.Host == "" {
		return endpoint{}, newError(provider, ErrUnavailable, err, "The server's %s API address is not a URL", provider)
	}
	if provider == Bitbucket && strings.HasSuffix(base.Path, familyPath[FamilyBitbucketDC]) {
		family = FamilyBitbucketDC
	}
	return endpoint{family: family, base: base}, nil
}

// selfHosted returns the API of a provider's own server at root. A Bitbucket host other than
// bitbucket.org is a Data Center server: Bitbucket Cloud has no other.
func selfHosted(provider string, root *url.URL) endpoint {
	family := provider
	if provider == Bitbucket {
		family = FamilyBitbucketDC
	}
	return endpoint{family: family, base: apiBase(root, family)}
}

// apiBase is where family's API lives below a server's root.
func apiBase(root *url.URL, family string) *url.URL {
	b := *root
	b.Path = strings.TrimRight(root.Path, "/") + familyPath[family]
	b.RawPath = ""
	return &b
}

// restAuth is the Authorization header of REST calls with token. A Bitbucket Cloud token
// written user:app-password is basic credentials; any other token is a bearer token (GitHub
// and GitLab personal and OAuth tokens, Bitbucket access tokens, Data Center HTTP tokens).
func restAuth(family, token string) string {
	if family == FamilyBitbucket && strings.Contains(token, ":") {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(token))
	}
	return "Bearer " + token
}

// gitAuth is the Authorization header of git's smart HTTP requests with token, in the form
// each provider documents for tokens over https.
func gitAuth(family, token string) string {
	basic := func(user string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+token))
	}
	switch family {
	case FamilyGitHub:
		return basic("x-access-token")
	case FamilyGitLab:
		return basic("oauth2")
	case FamilyBitbucket:
		if strings.Contains(token, ":") {
			return "Basic " + base64.StdEncoding.EncodeToString([]byte(token))
		}
		return basic("x-token-auth")
	}
	return "Bearer " + token
}

// newAPI returns the account at ep for token, calling through hc.
func newAPI(provider string, ep endpoint, token string, hc *http.Client) API {
	r := &rest{provider: provider, base: ep.base, http: hc, auth: restAuth(ep.family, token)}
	switch ep.family {
	case FamilyGitHub:
		return &github{r}
	case FamilyGitLab:
		return &gitlab{r}
	case FamilyBitbucket:
		return &bitbucket{r}
	default:
		return &bitbucketDC{r}
	}
}
