package gitprovider

import "net/url"

// Remote is where a conversation's repository lives upstream and how agentd authenticates
// to it. It is agentd's alone: none of it enters a sandbox.
type Remote struct {
	Provider                string   // github, gitlab, bitbucket, enterprise_sso
	Repository              string   // owner/name (GitLab: group/subgroup/name; Bitbucket DC: PROJECT/repo)
	URL                     *url.URL // the upstream git URL, e.g. https://github.com/owner/name.git; no credentials
	Authorization           string   // value of the Authorization header git requests upstream carry
	AuthorName, AuthorEmail string   // the user's provider login and e-mail, for commits
}
