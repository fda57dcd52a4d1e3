package search

import (
	"errors"
	"path"
	"strings"
)

// maxBraceExpansions bounds how many patterns {a,b} alternatives may expand into.
const maxBraceExpansions = 256

// pattern is a compiled glob: the brace alternatives, each split into path segments. A
// segment is matched with path.Match (*, ?, [...], \x); a segment "**" matches any number of
// segments, none included.
type pattern struct {
	alts [][]string
	text string
}

var errBadPattern = errors.New("malformed glob pattern")

// compileGlob checks and compiles a slash-separated glob.
func compileGlob(p string) (*pattern, error) {
	p = strings.TrimPrefix(p, "./")
	exp, err := expandBraces(p)
	if err != nil {
		return nil, err
	}
	g := &pattern{text: p}
	for _, e := range exp {
		segs := strings.Split(strings.Trim(e, "/"), "/")
		var clean []string
		for _, s := range segs {
			if s == "" || s == "." {
				continue
			}
			if s != "**" && strings.Contains(s, "**") {
				// "a**b" means what "a*b" means within one segment.
				s = strings.ReplaceAll(s, "**", "*")
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, errBadPattern
			}
			// Collapse runs of ** which match the same as one.
			if s == "**" && len(clean) > 0 && clean[len(clean)-1] == "**" {
				continue
			}
			clean = append(clean, s)
		}
		g.alts = append(g.alts, clean)
	}
	return g, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *pattern) match(rel string) bool {
	segs := strings.Split(rel, "/")
	for _, alt := range g.alts {
		if matchSegs(alt, segs) {
			return true
		}
	}
	return false
}

// couldMatchUnder reports whether some path under directory rel might match, so that a walk
// can skip directories no alternative reaches.
func (g *pattern) couldMatchUnder(rel string) bool {
	if rel == "." || rel == "" {
		return true
	}
	segs := strings.Split(rel, "/")
	for _, alt := range g.alts {
		if prefixMatch(alt, segs) {
			return true
		}
	}
	return false
}

// mentions reports whether the pattern names a directory literally, which lets a search
// enter a directory it would otherwise skip (.github, node_modules).
func (g *pattern) mentions(name string) bool {
	for _, alt := range g.alts {
		for _, s := range alt {
			if s == name {
				return true
			}
		}
	}
	return false
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(segs); i++ {
				if matchSegs(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// prefixMatch reports whether the directory segs can be the start of a path pat matches.
func prefixMatch(pat, segs []string) bool {
	for len(segs) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	// The directory itself matched a prefix; a file below it needs a segment left.
	return len(pat) > 0
}

// expandBraces expands {a,b} alternatives, nested ones too. A brace without a comma, or an
// unbalanced one, is literal, as in bash.
func expandBraces(p string) ([]string, error) {
	out := []string{p}
	for done := false; !done; {
		done = true
		var next []string
		for _, s := range out {
			open, close, parts := firstBraceGroup(s)
			if open < 0 {
				next = append(next, s)
				continue
			}
			done = false
			for _, part := range parts {
				next = append(next, s[:open]+part+s[close+1:])
			}
			if len(next) > maxBraceExpansions {
				return nil, errors.New("glob pattern has too many {a,b} alternatives")
			}
		}
		out = next
	}
	return out, nil
}

// firstBraceGroup finds the first {...} holding a top-level comma and returns its bounds and
// alternatives, or open -1.
func firstBraceGroup(s string) (open, close int, parts []string) {
scan:
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth, start := 0, i+1
			var alts []string
			for j := i; j < len(s); j++ {
				switch s[j] {
				case '\\':
					j++
				case '{':
					depth++
				case '}':
					depth--
					if depth == 0 {
						if alts == nil {
							continue scan // no comma: literal braces
						}
						return i, j, append(alts, s[start:j])
					}
				case ',':
					if depth == 1 {
						alts = append(alts, s[start:j])
						start = j + 1
					}
				}
			}
			return -1, -1, nil // unbalanced
		}
	}
	return -1, -1, nil
}
