package skill

import (
	"reflect"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	found := []Found{
		{Path: "agents.md", Data: []byte("Run make check.")},
		{Path: "AGENT.md", Data: []byte("Second agents file.")},
		{Path: ".CURSORRULES", Data: []byte("Cursor rules.")},
		{Path: "CLAUDE.md", Data: []byte{0xff}},
		{SkillDir: ".agents/skills", Path: "deploy.md", Data: []byte("---\ntriggers: [deploy]\n---\nDeploy with make deploy.")},
		{SkillDir: ".agents/skills", Path: "README.md", Data: []byte("About these skills.")},
		{SkillDir: ".agents/skills", Path: "pdf/SKILL.md", Data: []byte("---\nname: pdf\ntriggers: [pdf]\n---\nUse pdftotext.")},
		{SkillDir: ".agents/skills", Path: "pdf/references/api.md", Data: []byte("Reference, not a skill.")},
		{SkillDir: ".agents/skills", Path: "lint/SKILL.md", Data: []byte("---\ndescription: lints\n---\nRun the linter.")},
		{SkillDir: ".openhands/skills", Path: "deploy.md", Data: []byte("Shadowed.")},
		{SkillDir: ".openhands/microagents", Path: "repo.md", Data: []byte("---\nname: repo\ntype: repo\nagent: CodeActAgent\n---\nLegacy repo notes.")},
		{SkillDir: ".openhands/microagents", Path: "tools/docker.md", Data: []byte("---\ntriggers:\n- docker\n---\nUse podman.")},
		{SkillDir: ".openhands/microagents", Path: "broken.md", Data: []byte("---\ntriggers: [x]\n")},
		{SkillDir: ".openhands/microagents", Path: "huge.md", TooLarge: true, Size: MaxFileBytes + 1},
		{SkillDir: ".openhands/microagents", Path: "escape.md", Problem: "path escapes from parent"},
		{Dir: "project", Path: "AGENTS.md", Data: []byte("Repository agents file.")},
	}
	skills, warnings := Load(found)
	var got []string
	for _, s := range skills {
		got = append(got, s.Name+"|"+string(s.Type)+"|"+strings.Join(s.Triggers, ",")+"|"+s.Source+"|"+s.Content)
	}
	want := []string{
		"agents|repo||agents.md|Run make check.",
		"cursorrules|repo||.CURSORRULES|Cursor rules.",
		"deploy|knowledge|deploy|.agents/skills/deploy.md|Deploy with make deploy.",
		"pdf|knowledge|pdf|.agents/skills/pdf/SKILL.md|Use pdftotext.",
		"repo|repo||.openhands/microagents/repo.md|Legacy repo notes.",
		"tools/docker|knowledge|docker|.openhands/microagents/tools/docker.md|Use podman.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skills:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	var ws []string
	for _, w := range warnings {
		ws = append(ws, w.String())
	}
	wantWarnings := []string{
		`AGENT.md: a skill named "agents" was loaded already, from agents.md`,
		"CLAUDE.md: the file is not UTF-8 text",
		".agents/skills/lint/SKILL.md: unsupported skill: a SKILL.md without triggers",
		`.openhands/skills/deploy.md: a skill named "deploy" was loaded already`,
		".openhands/microagents/broken.md: the frontmatter is not closed",
		".openhands/microagents/huge.md: the file is 65537 bytes, over the limit of 65536",
		".openhands/microagents/escape.md: the file could not be read: path escapes from parent",
		`project/AGENTS.md: a skill named "agents" was loaded already`,
	}
	if len(ws) != len(wantWarnings) {
		t.Fatalf("warnings:\n  %s", strings.Join(ws, "\n  "))
	}
	for i := range ws {
		if !strings.HasPrefix(ws[i], wantWarnings[i]) {
			t.Errorf("warning %d: %q, want it to start with %q", i, ws[i], wantWarnings[i])
		}
	}
}

func TestMerge(t *testing.T) {
	user := []Skill{{Name: "style", Source: SourceUser}, {Name: "mine", Source: SourceUser}}
	ws := []Skill{{Name: "agents", Source: "AGENTS.md"}, {Name: "style", Source: ".openhands/skills/style.md"}}
	got := Merge(user, ws)
	var names []string
	for _, s := range got {
		names = append(names, s.Name+"@"+s.Source)
	}
	want := "mine@user agents@AGENTS.md style@.openhands/skills/style.md"
	if strings.Join(names, " ") != want {
		t.Fatalf("merged %v, want %s", names, want)
	}
}
