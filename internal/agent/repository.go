package agent

import "fmt"

// Repository is the git repository a conversation works on, as the model is told of it.
type Repository struct {
	Name   string // owner/name
	Dir    string // where the clone is in the sandbox
	Branch string // the branch checked out at the start; "" for the default branch
	// Request is the provider's word for a change request: "pull request" or "merge request".
	Request string
}

// repositorySection tells the model where the conversation's repository is and how its
// changes leave the sandbox, so that it neither searches for the clone nor asks for a token.
func repositorySection(r Repository) string {
	if r.Name == "" {
		return ""
	}
	branch := "its default branch"
	if r.Branch != "" {
		branch = "the branch " + r.Branch
	}
	request := r.Request
	if request == "" {
		request = "pull request"
	}
	return fmt.Sprintf("\n\n<REPOSITORY_INFO>\nThe repository %s is cloned at %s, with %s checked out. "+
		"Its remote origin needs no credentials: git pull and git push work as they are (never put a token in a URL or the git configuration). "+
		"Commit on a new branch, push it, and open the %s with the tool for that when the user asks for one.\n</REPOSITORY_INFO>",
		r.Name, r.Dir, branch, request)
}
