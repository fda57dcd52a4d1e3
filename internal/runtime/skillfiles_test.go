package runtime

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func skillFilesRequest() runtimeclient.SkillFilesRequest {
	return runtimeclient.SkillFilesRequest{
		Dirs:      []string{"repo", ""},
		RootFiles: []string{"AGENTS.md", "agent.md", ".cursorrules"},
		SkillDirs: []string{".agents/skills", ".openhands/microagents"},
		Exclude:   []string{"README.md"},
		MaxFiles:  10, MaxFileBytes: 100, MaxTotalBytes: 1000,
	}
}

func postSkillFiles(t *testing.T, hs string, req any) (int, runtimeclient.SkillFilesResult, string) {
	t.Helper()
	return postJSON[runtimeclient.SkillFilesResult](t, hs+"/api/skill-files", req)
}

func describe(res runtimeclient.SkillFilesResult) []string {
	var out []string
	for _, f := range res.Files {
		s := f.Dir + "|" + f.SkillDir + "|" + f.Path + "|" + string(f.Content)
		if f.TooLarge {
			s += "|too large"
		}
		if f.Problem != "" {
			s += "|" + f.Problem
		}
		out = append(out, s)
	}
	return out
}

func TestSkillFiles(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.md": "outside the workspace"})
	writeFiles(t, ws, map[string]string{
		"AGENTS.md":                               "workspace agents",
		"repo/agents.MD":                          "repo agents",
		"repo/.cursorrules":                       "cursor",
		"repo/.agents/skills/b.md":                "b",
		"repo/.agents/skills/a/SKILL.md":          "a",
		"repo/.agents/skills/README.md":           "readme",
		"repo/.agents/skills/notes.txt":           "not markdown",
		"repo/.agents/skills/big.md":              strings.Repeat("x", 101),
		"repo/.openhands/microagents/legacy.md":   "legacy",
		"repo/.openhands/microagents/sub/deep.md": "deep",
	})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(ws, "repo/.agents/skills/escape.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b.md", filepath.Join(ws, "repo/.agents/skills/c.md")); err != nil {
		t.Fatal(err)
	}
	code, res, body := postSkillFiles(t, hs.URL, skillFilesRequest())
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	got := describe(res)
	want := []string{
		"repo||agents.MD|repo agents",
		"repo||.cursorrules|cursor",
		"repo|.agents/skills|a/SKILL.md|a",
		"repo|.agents/skills|b.md|b",
		"repo|.agents/skills|big.md||too large",
		"repo|.agents/skills|c.md|b",
		"repo|.agents/skills|escape.md||path escapes from parent",
		"repo|.openhands/microagents|legacy.md|legacy",
		"repo|.openhands/microagents|sub/deep.md|deep",
		"||AGENTS.md|workspace agents",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || res.Truncated {
		t.Fatalf("files (truncated %v):\n  %s\nwant:\n  %s", res.Truncated, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestSkillFilesBounds(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	writeFiles(t, ws, map[string]string{
		"s/1.md": "11111", "s/2.md": "22222", "s/3.md": "33333",
	})
	req := skillFilesRequest()
	req.Dirs, req.SkillDirs = []string{""}, []string{"s"}

	req.MaxFiles = 2
	_, res, _ := postSkillFiles(t, hs.URL, req)
	if len(res.Files) != 2 || !res.Truncated {
		t.Errorf("max_files 2: %v, truncated %v", describe(res), res.Truncated)
	}
	req.MaxFiles, req.MaxTotalBytes = 10, 12
	_, res, _ = postSkillFiles(t, hs.URL, req)
	if len(res.Files) != 2 || !res.Truncated {
		t.Errorf("max_total_bytes 12: %v, truncated %v", describe(res), res.Truncated)
	}
	req.Dirs = []string{"missing"}
	code, res, body := postSkillFiles(t, hs.URL, req)
	if code != http.StatusOK || len(res.Files) != 0 || res.Truncated {
		t.Errorf("a missing directory: %d %s", code, body)
	}
}

func TestSkillFilesRefusesPathsOutside(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	for _, bad := range []func(*runtimeclient.SkillFilesRequest){
		func(r *runtimeclient.SkillFilesRequest) { r.Dirs = []string{"../x"} },
		func(r *runtimeclient.SkillFilesRequest) { r.Dirs = []string{"/etc"} },
		func(r *runtimeclient.SkillFilesRequest) { r.Dirs = []string{"a/../b"} },
		func(r *runtimeclient.SkillFilesRequest) { r.SkillDirs = []string{"../.."} },
		func(r *runtimeclient.SkillFilesRequest) { r.RootFiles = []string{"../AGENTS.md"} },
		func(r *runtimeclient.SkillFilesRequest) { r.MaxFiles = 0 },
	} {
		req := skillFilesRequest()
		bad(&req)
		if code, _, body := postSkillFiles(t, hs.URL, req); code != http.StatusUnprocessableEntity || !strings.Contains(body, "detail") {
			t.Errorf("%+v: %d %s, want 422", req, code, body)
		}
	}
	if code, _, body := postSkillFiles(t, hs.URL, map[string]any{"dirs": []string{""}, "max_files": 1, "max_file_bytes": 1, "max_total_bytes": 1, "extra": 1}); code != http.StatusUnprocessableEntity {
		t.Errorf("unknown field: %d %s", code, body)
	}
}
