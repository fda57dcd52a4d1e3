package conversation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/tool/providertool"
)

func TestTaskPrompt(t *testing.T) {
	pr := &gitprovider.PullRequest{Number: 42, Head: "fix-it", Base: "develop"}
	for _, family := range []string{gitprovider.FamilyGitHub, gitprovider.FamilyGitLab, gitprovider.FamilyBitbucket} {
		w := providertool.WordsFor(family)
		for _, typ := range []string{TaskOpenIssue, TaskMergeConflicts, TaskFailingChecks, TaskUnresolvedComments, TaskOpenPR} {
			task := SuggestedTask{Provider: "x", Type: typ, Repository: "acme/api", Number: 42, Title: "Make it work"}
			var got string
			if typ == TaskOpenIssue {
				got = taskPrompt(task, w, "THE ISSUE TEXT", nil)
			} else {
				got = taskPrompt(task, w, "THE PR TEXT", pr)
			}
			want := []string{"acme/api", w.Provider, `"Make it work"`, w.CreateRequestTool(), "THE "}
			if typ == TaskOpenIssue {
				want = append(want, "issue #42", providertool.ReadIssueTool, "Closes #42", w.Request)
			} else {
				want = append(want, w.Request+" "+w.Sigil+"42", w.ReadRequestTool(), "fix-it")
			}
			if typ == TaskFailingChecks {
				want = append(want, w.CI)
			}
			if typ == TaskMergeConflicts {
				want = append(want, "develop")
			}
			for _, s := range want {
				if !strings.Contains(got, s) {
					t.Errorf("%s on %s: the prompt lacks %q:\n%s", typ, family, s, got)
				}
			}
			if strings.Contains(got, "_TOKEN") || strings.Contains(got, "$") {
				t.Errorf("%s on %s: the prompt points at a token:\n%s", typ, family, got)
			}
		}
	}
	if got := taskPrompt(SuggestedTask{Type: TaskFailingChecks, Repository: "g/p", Number: 3}, providertool.WordsFor(gitprovider.FamilyGitLab), "", nil); !strings.Contains(got, "could not be fetched") ||
		!strings.Contains(got, "read_merge_request") || !strings.Contains(got, "merge request !3") {
		t.Errorf("a prompt without content:\n%s", got)
	}
}

func TestSuggestedTaskTypes(t *testing.T) {
	s := NewService(Options{})
	defer s.Close()
	for _, typ := range []string{"", TaskOpenPR, TaskMergeConflicts} {
		if _, err := s.SuggestedTaskPrompt(context.Background(), "u", SuggestedTask{Type: typ, Repository: "a/b", Number: 1}); err != nil {
			t.Errorf("type %q: %v", typ, err)
		}
	}
	if _, err := s.SuggestedTaskPrompt(context.Background(), "u", SuggestedTask{Type: "CREATE_MICROAGENT", Repository: "a/b", Number: 1}); !errors.Is(err, ErrUnsupportedTask) {
		t.Errorf("CREATE_MICROAGENT: %v, want ErrUnsupportedTask", err)
	}
}
