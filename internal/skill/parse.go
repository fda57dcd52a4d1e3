package skill

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of what one skill may say.
const (
	// MaxDescription bounds a description; a longer one is cut, with a note.
	MaxDescription = 1024
	// MaxNameLen bounds a skill's name.
	MaxNameLen = 200
	// MaxTriggers bounds the triggers of one skill.
	MaxTriggers = 64
)

// frontmatter is the YAML header of a skill file. Keys it does not name (version, license,
// agent, the V0 type, ...) are ignored, as OpenHands ignores them.
type frontmatter struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Triggers    stringList `yaml:"triggers"`
	Inputs      []input    `yaml:"inputs"`
	Paths       stringList `yaml:"paths"`
	MCPTools    yaml.Node  `yaml:"mcp_tools"`
}

type input struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// stringList is a YAML list of strings that may also be written as one string: a
// comma-separated one for paths, a single word for triggers.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*l = nil
			return nil
		}
		*l = splitComma(n.Value)
		return nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
				return fmt.Errorf("line %d: a list item is not a word", c.Line)
			}
			out = append(out, c.Value)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("line %d: want a list of words", n.Line)
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ErrUnsupported: the file is a well-formed skill of a kind agentd's agent does not use.
var ErrUnsupported = errors.New("unsupported skill")

// Parse reads a skill file: Markdown with an optional YAML frontmatter between "---" lines.
// The type is inferred as OpenHands does (the V0 "type" key is not read): inputs make a task
// skill, triggers a knowledge skill, neither a repo skill. defaultName names a skill whose
// frontmatter does not; source says where it came from.
//
// A file that is not UTF-8 text, has an unclosed or malformed frontmatter, an empty body or a
// bad name is an error; a path-scoped skill (paths) is ErrUnsupported.
func Parse(data []byte, defaultName, source string) (Skill, error) {
	text, err := decodeText(data)
	if err != nil {
		return Skill{}, err
	}
	head, body, err := splitFrontmatter(text)
	if err != nil {
		return Skill{}, err
	}
	var fm frontmatter
	if strings.TrimSpace(head) != "" {
		if err := yaml.Unmarshal([]byte(head), &fm); err != nil {
			return Skill{}, fmt.Errorf("frontmatter: %s", yamlProblem(err))
		}
	}
	if len(fm.Paths) > 0 {
		return Skill{}, fmt.Errorf("%w: path-scoped skills (paths) are not supported", ErrUnsupported)
	}
	s := Skill{Name: strings.TrimSpace(fm.Name), Type: TypeRepo, Description: description(fm.Description),
		Content: strings.TrimSpace(body), Source: source}
	if s.Name == "" {
		s.Name = defaultName
	}
	if err := CheckName(s.Name); err != nil {
		return Skill{}, err
	}
	if s.Content == "" {
		return Skill{}, errors.New("the skill has no content")
	}
	if s.Triggers, err = CleanTriggers(fm.Triggers); err != nil {
		return Skill{}, err
	}
	if len(s.Triggers) > 0 {
		s.Type = TypeKnowledge
	}
	if len(fm.Inputs) > 0 {
		if err := taskSkill(&s, fm.Inputs); err != nil {
			return Skill{}, err
		}
	}
	if s.MCPServers, err = parseMCPTools(&fm.MCPTools); err != nil {
		return Skill{}, err
	}
	return s, nil
}

// Plain reads a file whose whole text is the instructions (AGENTS.md and its kin): always on,
// named name.
func Plain(data []byte, name, source string) (Skill, error) {
	text, err := decodeText(data)
	if err != nil {
		return Skill{}, err
	}
	s := Skill{Name: name, Type: TypeRepo, Content: strings.TrimSpace(text), Source: source}
	if s.Content == "" {
		return Skill{}, errors.New("the file is empty")
	}
	return s, nil
}

func decodeText(data []byte) (string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return "", errors.New("the file is not UTF-8 text")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", errors.New("the file holds NUL bytes: it is not text")
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n"), nil
}

// splitFrontmatter cuts text into its frontmatter (empty when there is none) and its body.
func splitFrontmatter(text string) (head, body string, err error) {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", text, nil
	}
	var lines []string
	for {
		line, more, found := strings.Cut(rest, "\n")
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			return strings.Join(lines, "\n"), more, nil
		}
		if !found {
			return "", "", errors.New("the frontmatter is not closed: no line \"---\" after the first")
		}
		lines = append(lines, line)
		rest = more
	}
}

// yamlProblem words a YAML error without the library's prefix.
func yamlProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.Contains(msg, "cannot unmarshal") && strings.Contains(msg, "into skill.frontmatter") {
		return "it is not a mapping of keys to values"
	}
	return msg
}

func description(d string) string {
	d = strings.TrimSpace(d)
	if len(d) <= MaxDescription {
		return d
	}
	const note = " [cut: descriptions are limited to 1024 bytes]"
	cut := MaxDescription - len(note)
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut] + note
}

// CheckName refuses names that are empty, too long or hold control characters.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("the skill has no name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("the name is longer than %d bytes", MaxNameLen)
	case strings.ContainsFunc(name, unicode.IsControl):
		return errors.New("the name holds control characters")
	}
	return nil
}

// CleanTriggers trims the triggers and drops empty ones and repeats (ignoring case). More
// than MaxTriggers, or one with a line break, is an error.
func CleanTriggers(in []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" || seen[strings.ToLower(t)] {
			continue
		}
		if strings.ContainsFunc(t, unicode.IsControl) {
			return nil, fmt.Errorf("the trigger %q holds control characters", t)
		}
		seen[strings.ToLower(t)] = true
		out = append(out, t)
	}
	if len(out) > MaxTriggers {
		return nil, fmt.Errorf("more than %d triggers", MaxTriggers)
	}
	return out, nil
}

// taskSkill makes s a task skill: it triggers on "/<name>" too, and its content tells the
// agent to ask for the inputs the user did not give.
func taskSkill(s *Skill, inputs []input) error {
	var lines []string
	for _, in := range inputs {
		name := strings.TrimSpace(in.Name)
		if name == "" {
			return errors.New("an input has no name")
		}
		line := "- ${" + name + "}"
		if d := strings.TrimSpace(in.Description); d != "" {
			line += ": " + d
		}
		lines = append(lines, line)
	}
	s.Type = TypeTask
	trigger := "/" + s.Name
	if !containsFold(s.Triggers, trigger) {
		s.Triggers = append(s.Triggers, trigger)
	}
	s.Content += "\n\nThis task takes these inputs:\n" + strings.Join(lines, "\n") +
		"\nIf the user has not given a value for each of them, ask the user for the missing ones before you start."
	return nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
