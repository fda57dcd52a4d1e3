package providertool

import (
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/gitprovider"
)

// Bounds on what one issue or pull request puts in front of the model: a long thread is
// cut rather than flood the context. The provider's web page has the rest.
const (
	maxBodyChars = 8_000
	maxTextChars = 30_000
)

// IssueText renders an issue with its comments for the model.
func IssueText(i gitprovider.Issue) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Issue #%d in %s: %s\n", i.Number, i.Repository, oneLine(i.Title))
	fmt.Fprintf(&b, "State: %s. Author: %s.", or(i.State, "unknown"), or(i.Author, "unknown"))
	if i.URL != "" {
		fmt.Fprintf(&b, " %s", i.URL)
	}
	b.WriteString("\n\n")
	b.WriteString(body(i.Body))
	writeComments(&b, "Comments", i.Comments)
	return bounded(b.String(), i.URL)
}

// PullRequestText renders a pull (merge) request with its checks, reviews and comments for
// the model, in the provider's words.
func PullRequestText(pr gitprovider.PullRequest, w Words) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%d in %s: %s\n", capital(w.Request), w.Sigil, pr.Number, pr.Repository, oneLine(pr.Title))
	fmt.Fprintf(&b, "State: %s. Author: %s. Branch %s into %s", or(pr.State, "unknown"), or(pr.Author, "unknown"), or(pr.Head, "?"), or(pr.Base, "?"))
	if pr.HeadSHA != "" {
		fmt.Fprintf(&b, ", head commit %s", pr.HeadSHA)
	}
	b.WriteString(".")
	if pr.Conflicts {
		fmt.Fprintf(&b, " It has merge conflicts with %s.", or(pr.Base, "its base branch"))
	}
	if pr.URL != "" {
		fmt.Fprintf(&b, " %s", pr.URL)
	}
	b.WriteString("\n\n")
	b.WriteString(body(pr.Body))
	if len(pr.Checks) == 0 {
		fmt.Fprintf(&b, "\n\nChecks (%s): none reported.", w.CI)
	} else {
		fmt.Fprintf(&b, "\n\nChecks (%s):", w.CI)
		for _, c := range pr.Checks {
			fmt.Fprintf(&b, "\n- %s: %s", oneLine(c.Name), c.State)
			if c.URL != "" {
				fmt.Fprintf(&b, " (%s)", c.URL)
			}
		}
	}
	if len(pr.Reviews) > 0 {
		b.WriteString("\n\nReviews:")
		for _, r := range pr.Reviews {
			fmt.Fprintf(&b, "\n- %s: %s", or(r.Author, "unknown"), strings.ReplaceAll(r.State, "_", " "))
			if t := strings.TrimSpace(r.Body); t != "" {
				fmt.Fprintf(&b, ": %s", indent(clip(t, maxBodyChars)))
			}
		}
	}
	var review, general []gitprovider.Comment
	for _, c := range pr.Comments {
		if c.Path != "" {
			review = append(review, c)
		} else {
			general = append(general, c)
		}
	}
	writeComments(&b, "Review comments", review)
	writeComments(&b, "Comments", general)
	return bounded(b.String(), pr.URL)
}

// CreatedText tells the model that a pull (merge) request was opened.
func CreatedText(pr gitprovider.PullRequest, w Words) string {
	s := fmt.Sprintf("Opened %s %s%d in %s: %s (%s into %s).", w.Request, w.Sigil, pr.Number, pr.Repository, oneLine(pr.Title), pr.Head, pr.Base)
	if pr.URL != "" {
		s += " " + pr.URL
	}
	return s
}

func writeComments(b *strings.Builder, title string, cs []gitprovider.Comment) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(b, "\n\n%s (%d):", title, len(cs))
	for _, c := range cs {
		fmt.Fprintf(b, "\n- %s", or(c.Author, "unknown"))
		if c.Path != "" {
			fmt.Fprintf(b, " on %s", c.Path)
			if c.Line > 0 {
				fmt.Fprintf(b, ":%d", c.Line)
			}
		}
		if c.Resolved != nil {
			if *c.Resolved {
				b.WriteString(" (resolved)")
			} else {
				b.WriteString(" (unresolved)")
			}
		}
		if c.CreatedAt != nil {
			fmt.Fprintf(b, " at %s", c.CreatedAt.UTC().Format("2006-01-02 15:04"))
		}
		fmt.Fprintf(b, ": %s", indent(clip(strings.TrimSpace(c.Body), maxBodyChars)))
	}
}

func body(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no description)"
	}
	return clip(s, maxBodyChars)
}

// bounded cuts text to maxTextChars, pointing at the web page for the rest.
func bounded(s, url string) string {
	if len(s) <= maxTextChars {
		return s
	}
	cut := strings.ToValidUTF8(s[:maxTextChars], "")
	note := fmt.Sprintf("\n\n[%d more characters not shown", len(s)-len(cut))
	if url != "" {
		note += "; the whole thread is at " + url
	}
	return cut + note + "]"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf(" [... %d more characters]", len(s)-n)
}

// indent keeps a multi-line text inside its list item.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
