package providertool

import "fmt"

func readIssueDescription(w Words, repo string) string {
	return fmt.Sprintf(`Read an issue of the repository %s on %s, with its comments. The call is made by the server with the user's %s account: no token is needed, and none is available in the sandbox.`,
		repo, w.Provider, w.Provider)
}

func readRequestDescription(w Words, repo string) string {
	return fmt.Sprintf(`Read a %s (%s) of the repository %s on %s: its description, branches, whether it has merge conflicts, its checks (%s), its reviews, and its comments including review comments on the diff. The call is made by the server with the user's %s account: no token is needed, and none is available in the sandbox.`,
		w.Request, w.Short, repo, w.Provider, w.CI, w.Provider)
}

func createRequestDescription(w Words, repo string) string {
	return fmt.Sprintf(`Open a %s (%s) in the repository %s on %s, from a branch you have pushed. Commit and push the branch first. The call is made by the server with the user's %s account; the %s's number is recorded on the conversation.`,
		w.Request, w.Short, repo, w.Provider, w.Provider, w.Request)
}
