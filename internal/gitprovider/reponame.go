package gitprovider

import (
	"fmt"
	"net/url"
	"strings"
)

// CleanRepository returns a repository name in the form the providers write it (owner/name,
// group/subgroup/name), also when given as a web or clone URL or with a .git suffix. Each
// segment is letters, digits and - _ . (a Bitbucket Data Center personal project starts with
// ~); nothing that could leave the repository's path (. or .., empty segments).
func CleanRepository(name string) (string, error) {
	s := strings.TrimSpace(name)
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("%w: %q is neither owner/name nor a URL", ErrBadRepository, name)
		}
		s = u.Path
	}
	s = strings.TrimSuffix(strings.Trim(s, "/"), ".git")
	segs := strings.Split(s, "/")
	if len(segs) < 2 {
		return "", fmt.Errorf("%w: %q: want owner/name", ErrBadRepository, name)
	}
	for i, seg := range segs {
		if !validSegment(seg, i == 0) {
			return "", fmt.Errorf("%w: %q: %q is not a repository path segment", ErrBadRepository, name, seg)
		}
	}
	return strings.Join(segs, "/"), nil
}

func validSegment(s string, first bool) bool {
	if s == "" || s == "." || s == ".." || len(s) > 255 {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' && first && i == 0
		if !ok {
			return false
		}
	}
	return true
}

// repoSegments splits a clean name for a family: GitLab takes a group path of any depth,
// the others exactly owner/name.
func repoSegments(provider, family, name string) ([]string, error) {
	clean, err := CleanRepository(name)
	if err != nil {
		return nil, newError(provider, ErrBadRepository, nil, "%s", strings.TrimPrefix(err.Error(), ErrBadRepository.Error()+": "))
	}
	segs := strings.Split(clean, "/")
	if family != FamilyGitLab && len(segs) != 2 {
		return nil, newError(provider, ErrBadRepository, nil, "%q: a %s repository is named owner/name", name, provider)
	}
	return segs, nil
}

// escapeSegments escapes each segment for a URL path and joins them with sep.
func escapeSegments(segs []string, sep string) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = url.PathEscape(s)
	}
	return strings.Join(out, sep)
}
