package skill

import "testing"

func TestMatch(t *testing.T) {
	s := Skill{Type: TypeKnowledge, Triggers: []string{"git", "/deploy", "Kubernetes", "ci pipeline", "größe"}}
	tests := []struct {
		text, want string
	}{
		{"How do I use git here?", "git"},
		{"GIT status please", "git"},
		{"open github.com", ""},
		{"gitlab or git?", "git"},
		{"legit", ""},
		{"git2go", ""},
		{"(git)", "git"},
		{"please /deploy now", "/deploy"},
		{"x/deploy", ""},
		{"/deployment", ""},
		{"set up kubernetes", "Kubernetes"},
		{"the CI Pipeline fails", "ci pipeline"},
		{"the ci  pipeline fails", ""},
		{"die GRÖSSE", ""},
		{"die Größe zählt", "größe"},
		{"nothing here", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := s.Match(tc.text); got != tc.want {
			t.Errorf("Match(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := (Skill{Type: TypeRepo}).Match("git"); got != "" {
		t.Errorf("a repo skill matched %q", got)
	}
}
