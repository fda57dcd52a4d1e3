package terminal

import (
	"encoding/json"
	"strings"
)

// splitCommands splits a command string into the top-level command lines bash would run one
// after another, each followed by its own prompt. The terminal runs one per call, because it
// waits for one prompt.
//
// This is a line scanner, not a bash parser. A newline ends a command unless it is inside
// quotes ('...', "...", $'...', `...`), inside a heredoc body, after a trailing \ | && or ||,
// or inside an open ( ) or { } group or if/for/while/until/case/select block. Its known limits:
// keywords are recognised only where a command starts (after a newline, ;, &, |, (, { or a
// keyword such as then or do); $( ... ) inside double quotes spanning lines is taken as part of
// the quote, which is right; arithmetic, [[ ]] and case patterns with unbalanced parentheses
// are approximations. When unsure it keeps lines together, so the worst case is a multi-line
// input run as-is, where bash prompts after every line and the call reports the first.
func splitCommands(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var (
		cmds     []string
		cur      strings.Builder
		sc       scanState
		heredocs []heredoc // announced on the current line, bodies start on the next
		body     []heredoc // bodies being read
	)
	flush := func() {
		c := strings.TrimSpace(cur.String())
		cur.Reset()
		if c != "" && !isComment(c) {
			cmds = append(cmds, c)
		}
	}
	for line := range strings.Lines(s) {
		cur.WriteString(line)
		text := strings.TrimSuffix(line, "\n")
		if len(body) > 0 {
			check := text
			if body[0].stripTabs {
				check = strings.TrimLeft(text, "\t")
			}
			if check == body[0].delim {
				body = body[1:]
			}
			if len(body) == 0 && !sc.continues() {
				flush()
			}
			continue
		}
		heredocs = sc.scanLine(text, heredocs[:0])
		if len(heredocs) > 0 {
			body = append(body, heredocs...)
			continue
		}
		if !sc.continues() {
			flush()
		}
	}
	flush()
	return cmds
}

func isComment(c string) bool {
	for line := range strings.Lines(c) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

type heredoc struct {
	delim     string
	stripTabs bool
}

// scanState is what carries from one line to the next.
type scanState struct {
	quote    byte // ', ", ` or '$' for $'...'; 0 outside quotes
	parens   int  // open ( and $( groups
	braces   int  // open { } groups
	blocks   int  // open if/for/while/until/case/select blocks
	trailing bool // the line ended with \, |, && or ||
}

func (s *scanState) continues() bool {
	return s.quote != 0 || s.parens > 0 || s.braces > 0 || s.blocks > 0 || s.trailing
}

var (
	openers = map[string]bool{"if": true, "for": true, "while": true, "until": true, "case": true, "select": true}
	closers = map[string]bool{"fi": true, "done": true, "esac": true}
	// keywords after which a command starts.
	leaders = map[string]bool{"then": true, "do": true, "else": true, "elif": true, "if": true, "while": true, "until": true, "!": true, "time": true}
)

// scanLine scans one line, updating the state, and appends the heredocs it announces.
func (s *scanState) scanLine(line string, hds []heredoc) []heredoc {
	s.trailing = false
	cmdStart := s.quote == 0
	last := byte(0) // last significant character outside quotes
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch s.quote {
		case '\'':
			if c == '\'' {
				s.quote = 0
			}
			continue
		case '$', '"':
			if c == '\\' {
				i++ // an escaped character, or at the end of the line a joined line
				continue
			}
			if (s.quote == '"' && c == '"') || (s.quote == '$' && c == '\'') {
				s.quote = 0
			}
			continue
		case '`':
			if c == '\\' {
				i++
			} else if c == '`' {
				s.quote = 0
			}
			continue
		}
		switch c {
		case ' ', '\t':
			continue
		case '\\':
			if i == len(line)-1 {
				s.trailing = true
				return hds
			}
			i++
			cmdStart = false
		case '\'':
			if i > 0 && line[i-1] == '$' {
				s.quote = '$'
			} else {
				s.quote = '\''
			}
			cmdStart = false
		case '"', '`':
			s.quote = c
			cmdStart = false
		case '#':
			if i == 0 || strings.IndexByte(" \t;&|()", line[i-1]) >= 0 {
				return hds // a comment runs to the end of the line
			}
			cmdStart = false
		case ';', '&', '|':
			cmdStart = true
		case '(':
			s.parens++
			cmdStart = true
		case ')':
			if s.parens > 0 {
				s.parens--
			}
			cmdStart = false
		case '<':
			if strings.HasPrefix(line[i:], "<<") && !strings.HasPrefix(line[i:], "<<<") {
				hd, n := parseHeredoc(line[i+2:])
				i += 1 + n
				if hd.delim != "" {
					hds = append(hds, hd)
				}
			} else if strings.HasPrefix(line[i:], "<<<") {
				i += 2
			}
			cmdStart = false
		case '>':
			cmdStart = false
		default:
			j := i
			for j < len(line) && strings.IndexByte(" \t;&|()<>'\"`\\", line[j]) < 0 {
				j++
			}
			word := line[i:j]
			if j == i {
				continue
			}
			i = j - 1
			switch {
			case cmdStart && openers[word]:
				s.blocks++
				cmdStart = leaders[word]
			case cmdStart && closers[word]:
				if s.blocks > 0 {
					s.blocks--
				}
				cmdStart = false
			case cmdStart && word == "{":
				s.braces++
				cmdStart = true
			case cmdStart && word == "}":
				if s.braces > 0 {
					s.braces--
				}
				cmdStart = false
			case cmdStart && leaders[word]:
				cmdStart = true
			default:
				cmdStart = false
				// "f() {" and "function f {": a group opened after a function name.
				if word == "{" && (last == ')' || strings.HasPrefix(strings.TrimSpace(line), "function ")) {
					s.braces++
					cmdStart = true
				}
			}
			last = word[len(word)-1]
			continue
		}
		last = c
	}
	if s.quote == 0 {
		t := strings.TrimRight(line, " \t")
		if strings.HasSuffix(t, "|") || strings.HasSuffix(t, "&&") {
			s.trailing = true
		}
	}
	return hds
}

// parseHeredoc reads the delimiter after "<<": an optional -, spaces, then a word that may be
// quoted. It returns the heredoc and how many bytes it read.
func parseHeredoc(rest string) (heredoc, int) {
	i := 0
	var hd heredoc
	if i < len(rest) && rest[i] == '-' {
		hd.stripTabs = true
		i++
	}
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
		i++
	}
	var b strings.Builder
	for i < len(rest) {
		c := rest[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(rest[i+1:], c)
			if end < 0 {
				b.WriteString(rest[i+1:])
				i = len(rest)
				continue
			}
			b.WriteString(rest[i+1 : i+1+end])
			i += end + 2
		case c == '\\' && i+1 < len(rest):
			b.WriteByte(rest[i+1])
			i += 2
		case strings.IndexByte(" \t;&|()<>", c) >= 0:
			hd.delim = b.String()
			return hd, i
		default:
			b.WriteByte(c)
			i++
		}
	}
	hd.delim = b.String()
	return hd, i
}

// looksLikeData reports whether a command is a JSON list or object rather than a shell
// command, a common slip where a model meant to write a file.
func looksLikeData(s string) bool {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '[' && t[0] != '{') {
		return false
	}
	return json.Valid([]byte(t))
}
