// Package providertool holds the tools that reach a conversation's git provider: read an
// issue and its comments, read a pull (merge) request with its checks, reviews and comments,
// and open one. They run in the control plane with the user's token, which never reaches the
// sandbox, and act only on the conversation's own repository. Names, descriptions and results
// use the provider's words (merge request on GitLab, pull request elsewhere).
package providertool
