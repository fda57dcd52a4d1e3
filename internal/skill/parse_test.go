package skill

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		file string
		want Skill
	}{
		{"no frontmatter: a repo skill named after its path", "Run `make test` before you commit.\n",
			Skill{Name: "default", Type: TypeRepo, Content: "Run `make test` before you commit."}},
		{"empty frontmatter", "---\n---\nUse tabs.",
			Skill{Name: "default", Type: TypeRepo, Content: "Use tabs."}},
		{"name and description", "---\nname: style\ndescription: How code looks.\n---\n\nUse tabs.\n",
			Skill{Name: "style", Type: TypeRepo, Description: "How code looks.", Content: "Use tabs."}},
		{"triggers make a knowledge skill", "---\nname: k8s\ntriggers:\n  - kubernetes\n  - kubectl\n---\nUse the staging cluster.",
			Skill{Name: "k8s", Type: TypeKnowledge, Triggers: []string{"kubernetes", "kubectl"}, Content: "Use the staging cluster."}},
		{"flow list, repeats and blanks dropped", "---\ntriggers: [Deploy, deploy, ' ', release]\n---\nSteps.",
			Skill{Name: "default", Type: TypeKnowledge, Triggers: []string{"Deploy", "release"}, Content: "Steps."}},
		{"one trigger as a word", "---\ntriggers: docker\n---\nBuild with buildx.",
			Skill{Name: "default", Type: TypeKnowledge, Triggers: []string{"docker"}, Content: "Build with buildx."}},
		{"the V0 type key is not read", "---\nname: legacy\ntype: knowledge\nversion: 1.0.0\nagent: CodeActAgent\n---\nOld style.",
			Skill{Name: "legacy", Type: TypeRepo, Content: "Old style."}},
		{"V0 knowledge microagent", "---\nname: github\ntype: knowledge\ntriggers:\n- github\n- git\n---\nUse the API.",
			Skill{Name: "github", Type: TypeKnowledge, Triggers: []string{"github", "git"}, Content: "Use the API."}},
		{"CRLF line ends and a BOM", "\ufeff---\r\nname: win\r\n---\r\nLine one.\r\nLine two.\r\n",
			Skill{Name: "win", Type: TypeRepo, Content: "Line one.\nLine two."}},
		{"closing dots", "---\nname: dots\n...\nBody.",
			Skill{Name: "dots", Type: TypeRepo, Content: "Body."}},
		{"a rule inside the body is not frontmatter", "Intro.\n\n---\n\nMore.",
			Skill{Name: "default", Type: TypeRepo, Content: "Intro.\n\n---\n\nMore."}},
		{"inputs make a task skill", "---\nname: release\ninputs:\n  - name: VERSION\n    description: the version to release\n---\nTag ${VERSION}.",
			Skill{Name: "release", Type: TypeTask, Triggers: []string{"/release"},
				Content: "Tag ${VERSION}.\n\nThis task takes these inputs:\n- ${VERSION}: the version to release\n" +
					"If the user has not given a value for each of them, ask the user for the missing ones before you start."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.file), "default", "src")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.want.Source = "src"
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, file, problem string
	}{
		{"unclosed frontmatter", "---\nname: x\ntriggers: [a]\nBody.", "not closed"},
		{"bad YAML", "---\nname: [unclosed\n---\nBody.", "frontmatter"},
		{"frontmatter is a list", "---\n- a\n- b\n---\nBody.", "not a mapping"},
		{"triggers are a mapping", "---\ntriggers:\n  a: b\n---\nBody.", "list of words"},
		{"a trigger is a mapping", "---\ntriggers:\n  - a: b\n---\nBody.", "not a word"},
		{"no content", "---\nname: empty\n---\n\n  \n", "no content"},
		{"empty file", "", "no content"},
		{"not UTF-8", "---\nname: x\n---\n\xff\xfe", "not UTF-8"},
		{"binary", "PK\x03\x04\x00\x00", "NUL"},
		{"name with a line break", "---\nname: \"a\\nb\"\n---\nBody.", "control characters"},
		{"name too long", "---\nname: " + strings.Repeat("n", MaxNameLen+1) + "\n---\nBody.", "longer than"},
		{"input without a name", "---\ninputs:\n  - description: d\n---\nBody.", "input has no name"},
		{"too many triggers", "---\ntriggers: [" + manyTriggers(MaxTriggers+1) + "]\n---\nBody.", "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), "default", "src")
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Parse: %v, want an error about %q", err, tc.problem)
			}
		})
	}
}

func manyTriggers(n int) string {
	var ts []string
	for i := range n {
		ts = append(ts, "t"+strings.Repeat("x", i))
	}
	return strings.Join(ts, ",")
}

func TestParsePathRulesUnsupported(t *testing.T) {
	for _, file := range []string{
		"---\npaths:\n  - 'server/**'\n---\nServer rules.",
		"---\npaths: 'a/**, b/*.go'\ntriggers: [x]\n---\nRules.",
	} {
		if _, err := Parse([]byte(file), "d", "s"); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Parse(%q): %v, want ErrUnsupported", file, err)
		}
	}
}

func TestParseCutsLongDescriptions(t *testing.T) {
	long := strings.Repeat("é", MaxDescription) // two bytes each
	s, err := Parse([]byte("---\ndescription: "+long+"\n---\nBody."), "d", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Description) > MaxDescription || !strings.HasSuffix(s.Description, "limited to 1024 bytes]") ||
		!strings.HasPrefix(s.Description, "éé") {
		t.Fatalf("description of %d bytes: %.40q…", len(s.Description), s.Description)
	}
}

func TestPlain(t *testing.T) {
	s, err := Plain([]byte("---\nnot: frontmatter\n---\n# Agents\nRun make.\n"), "agents", "AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	want := Skill{Name: "agents", Type: TypeRepo, Content: "---\nnot: frontmatter\n---\n# Agents\nRun make.", Source: "AGENTS.md"}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %#v", s)
	}
	if _, err := Plain([]byte(" \n"), "agents", "AGENTS.md"); err == nil {
		t.Fatal("an empty AGENTS.md was loaded")
	}
}
