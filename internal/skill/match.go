package skill

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match returns the first of the skill's triggers that text holds, or "". A trigger matches
// ignoring case and only as a whole token: no letter or digit may touch it on either side, so
// "git" does not fire on "github", while "/deploy" fires on "please /deploy".
func (s Skill) Match(text string) string {
	if len(s.Triggers) == 0 {
		return ""
	}
	lower := strings.ToLower(text)
	for _, t := range s.Triggers {
		if containsToken(lower, strings.ToLower(t)) {
			return t
		}
	}
	return ""
}

// containsToken reports whether tok occurs in text with no letter or digit right before or
// right after it.
func containsToken(text, tok string) bool {
	if tok == "" {
		return false
	}
	for from := 0; from <= len(text)-len(tok); {
		i := strings.Index(text[from:], tok)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(tok)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		from = start + size
	}
	return false
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
