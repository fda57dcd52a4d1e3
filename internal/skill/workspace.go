package skill

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Where a repository keeps its guidance, as OpenHands looks for it.
var (
	// RootFiles are the instruction files of other agents, looked for at the root of the
	// repository and of the workspace, ignoring case: each is an always-on skill under a fixed
	// name (AGENTS.md and agent.md are both "agents"; the first found wins).
	RootFiles = []RootFile{
		{File: "AGENTS.md", Name: "agents"},
		{File: "agent.md", Name: "agents"},
		{File: "CLAUDE.md", Name: "claude"},
		{File: "GEMINI.md", Name: "gemini"},
		{File: ".cursorrules", Name: "cursorrules"},
	}
	// Dirs hold skill files (every *.md but README.md, and <name>/SKILL.md), in priority
	// order: of two skills with one name, the first found wins. .openhands/microagents is the
	// legacy place.
	Dirs = []string{".agents/skills", ".openhands/skills", ".openhands/microagents"}
	// Excluded are the file names in Dirs that are not skills (compared ignoring case).
	Excluded = []string{"README.md"}
)

// RootFile is an instruction file and the name of its skill.
type RootFile struct {
	File string
	Name string
}

// Bounds of what one conversation loads from its workspace. A file over MaxFileBytes is
// skipped with a warning; files past MaxFiles or MaxTotalBytes are not read.
const (
	MaxFiles      = 64
	MaxFileBytes  = 64 << 10
	MaxTotalBytes = 256 << 10
)

// Found is one file the runtime found in the workspace.
type Found struct {
	// Dir is the directory it was looked for in, relative to the workspace ("" for the
	// workspace itself).
	Dir string
	// SkillDir is the one of Dirs it was found below; empty for a root file.
	SkillDir string
	// Path is the file's path relative to SkillDir, or its name as found for a root file.
	Path string
	Data []byte
	// TooLarge says the file was over the size bound and not read.
	TooLarge bool
	Size     int64
	// Problem says why a file that is there could not be read.
	Problem string
}

// Location is the file's path relative to the workspace.
func (f Found) Location() string { return path.Join(f.Dir, f.SkillDir, f.Path) }

// Warning says why a file was skipped.
type Warning struct {
	Path    string
	Problem string
}

func (w Warning) String() string { return w.Path + ": " + w.Problem }

// Load turns the files found in a workspace into skills, in the order found; a file that is
// not a usable skill is skipped with a warning, and of two skills with one name the first
// wins. Files below a directory that holds a SKILL.md belong to that skill (its references,
// scripts) and are not skills themselves.
func Load(found []Found) ([]Skill, []Warning) {
	var skills []Skill
	var warnings []Warning
	seen := map[string]string{} // skill name → where it was loaded from
	bundles := map[string]bool{}
	for _, f := range found {
		if f.SkillDir != "" && strings.EqualFold(path.Base(f.Path), "SKILL.md") && path.Dir(f.Path) != "." {
			bundles[path.Join(f.Dir, f.SkillDir, path.Dir(f.Path))] = true
		}
	}
	for _, f := range found {
		loc := f.Location()
		if f.SkillDir != "" && (excluded(f.Path) || inBundle(bundles, f)) {
			continue
		}
		if f.Problem != "" {
			warnings = append(warnings, Warning{loc, "the file could not be read: " + f.Problem})
			continue
		}
		if f.TooLarge {
			warnings = append(warnings, Warning{loc, fmt.Sprintf("the file is %d bytes, over the limit of %d", f.Size, MaxFileBytes)})
			continue
		}
		s, err := load(f)
		if err != nil {
			warnings = append(warnings, Warning{loc, err.Error()})
			continue
		}
		if first, ok := seen[s.Name]; ok {
			warnings = append(warnings, Warning{loc, fmt.Sprintf("a skill named %q was loaded already, from %s", s.Name, first)})
			continue
		}
		seen[s.Name] = loc
		skills = append(skills, s)
	}
	return skills, warnings
}

func excluded(p string) bool {
	for _, x := range Excluded {
		if strings.EqualFold(path.Base(p), x) {
			return true
		}
	}
	return false
}

// inBundle reports whether f lies below a SKILL.md's directory without being that SKILL.md.
func inBundle(bundles map[string]bool, f Found) bool {
	dir := path.Join(f.Dir, f.SkillDir, path.Dir(f.Path))
	isSkillFile := strings.EqualFold(path.Base(f.Path), "SKILL.md")
	for d := dir; ; d = path.Dir(d) {
		if bundles[d] && !(isSkillFile && d == dir) {
			return true
		}
		if d == "." || d == "/" || d == path.Join(f.Dir, f.SkillDir) {
			return false
		}
	}
}

func load(f Found) (Skill, error) {
	loc := f.Location()
	if f.SkillDir == "" {
		for _, rf := range RootFiles {
			if strings.EqualFold(rf.File, f.Path) {
				return Plain(f.Data, rf.Name, loc)
			}
		}
		return Skill{}, errors.New("not an instruction file agentd knows")
	}
	if strings.EqualFold(path.Base(f.Path), "SKILL.md") {
		name := path.Dir(f.Path)
		if name == "." {
			return Skill{}, errors.New("a SKILL.md belongs in a directory named after its skill")
		}
		s, err := Parse(f.Data, name, loc)
		if err == nil && s.Type == TypeRepo {
			return Skill{}, fmt.Errorf("%w: a SKILL.md without triggers is loaded only on the model's request (invoke_skill), which agentd's agent does not offer", ErrUnsupported)
		}
		return s, err
	}
	return Parse(f.Data, strings.TrimSuffix(f.Path, path.Ext(f.Path)), loc)
}

// Merge puts the user's skills and the workspace's together: a workspace skill replaces a
// user skill of the same name, as project skills win over user skills in OpenHands.
func Merge(user, workspace []Skill) []Skill {
	names := map[string]bool{}
	for _, s := range workspace {
		names[s.Name] = true
	}
	var out []Skill
	for _, s := range user {
		if !names[s.Name] {
			out = append(out, s)
		}
	}
	return append(out, workspace...)
}
