package terminal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// capBuffer holds a command's raw output between two calls. It keeps the first and the last
// half of its limit and counts what it dropped in between, so a command that prints without
// end (yes) costs bounded memory however long it runs.
type capBuffer struct {
	limit   int // 0 means DefaultMaxBufferedOutput
	head    []byte
	tail    []byte
	dropped int64
}

func (b *capBuffer) half() int {
	if b.limit <= 0 {
		return DefaultMaxBufferedOutput / 2
	}
	return b.limit / 2
}

func (b *capBuffer) Write(p []byte) {
	half := b.half()
	if room := half - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	// The tail may grow by a quarter past its half before it is cut back, so that cutting,
	// which copies, happens once per quarter rather than once per write.
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - half; over > half/4 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
}

// Take returns the output held and how many bytes of it were dropped, and empties the
// buffer. Where bytes were dropped, the output says so in a line of its own between the head
// and the tail, so that a reader of the text (or of the file it is saved to) sees the gap.
func (b *capBuffer) Take() ([]byte, int64) {
	if over := len(b.tail) - b.half(); over > 0 {
		b.dropped += int64(over)
		b.tail = b.tail[over:]
	}
	out := append([]byte(nil), b.head...)
	if b.dropped > 0 {
		out = fmt.Appendf(out, "\n[... %d bytes of output were not kept ...]\n", b.dropped)
	}
	out = append(out, b.tail...)
	dropped := b.dropped
	b.Reset()
	return out, dropped
}

// Reset drops the output held.
func (b *capBuffer) Reset() {
	b.head, b.tail, b.dropped = nil, nil, 0
}

// ansi matches terminal control sequences: CSI (colours, cursor movement), OSC (titles,
// hyperlinks), DCS/PM/APC strings, and two-byte escapes.
var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[()*+][0-9A-Za-z]|\x1b[@-Z\\-_=>]`)

// sgr matches a colour sequence (SGR: colours, bold, underline): the one kind of control
// sequence an observation keeps, for the people who read it; the model never sees one.
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// cleanOutput turns raw terminal output into the text a person would read on the screen:
// valid UTF-8, no control sequences, line ends as \n, and a line redrawn with \r (progress
// bars) shown as its last state. Trailing newlines are dropped; the caller adds its own.
func cleanOutput(raw []byte) string { return clean(raw, false) }

// colourOutput is cleanOutput keeping the colour sequences, which observations carry for
// clients to show; stripColour makes the model's text of it.
func colourOutput(raw []byte) string { return clean(raw, true) }

// stripColour removes the colour sequences (and any escape left alone) from colourOutput's
// text, which then reads as cleanOutput's.
func stripColour(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return s
	}
	return strings.ReplaceAll(sgr.ReplaceAllString(s, ""), "\x1b", "")
}

func clean(raw []byte, keepColour bool) string {
	s := strings.ToValidUTF8(string(raw), "\uFFFD")
	if keepColour {
		s = ansi.ReplaceAllStringFunc(s, func(seq string) string {
			if sgr.MatchString(seq) && len(sgr.FindString(seq)) == len(seq) {
				return seq
			}
			return ""
		})
	} else {
		s = ansi.ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if strings.ContainsAny(s, "\r\b\x07") || hasControl(s, keepColour) {
		var b strings.Builder
		for line := range strings.Lines(s) {
			nl := strings.HasSuffix(line, "\n")
			line = strings.TrimSuffix(line, "\n")
			if i := strings.LastIndexByte(strings.TrimRight(line, "\r"), '\r'); i >= 0 {
				line = line[i+1:]
			}
			b.WriteString(applyControls(line, keepColour))
			if nl {
				b.WriteByte('\n')
			}
		}
		s = b.String()
	}
	return strings.TrimRight(s, "\n")
}

// hasControl reports whether s has control characters other than \n and \t (and, when
// keepEsc, the escape that starts a colour sequence).
func hasControl(s string, keepEsc bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' && (c != 0x1b || !keepEsc) {
			return true
		}
	}
	return false
}

// applyControls applies backspaces and removes the other control characters of one line.
func applyControls(line string, keepEsc bool) string {
	if !hasControl(line, keepEsc) {
		return line
	}
	var out []rune
	for _, r := range line {
		switch {
		case r == '\b':
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case r == 0x1b && keepEsc:
			out = append(out, r)
		case r < 0x20 && r != '\t':
		default:
			out = append(out, r)
		}
	}
	return string(out)
}

// stripEcho removes the command line from the start of out, for when a program turned the
// terminal's echo back on and left it so.
func stripEcho(out, command string) string {
	cmd := strings.TrimRight(strings.ReplaceAll(command, "\r\n", "\n"), "\n")
	if cmd == "" || !strings.HasPrefix(out, cmd) {
		return out
	}
	rest := out[len(cmd):]
	if rest == "" || rest[0] == '\n' {
		return strings.TrimPrefix(rest, "\n")
	}
	return out
}

// clip bounds out to max characters, keeping its head and tail. When it cuts, it saves out
// under dir and names the file in the note, so the model can read the rest. out is what the
// terminal kept of the output, so the file is bounded as the terminal's buffer is; dropped
// says how much the buffer had already left out, so that the note does not call it full.
func clip(out string, maxChars int, dir string, dropped int64) string {
	n := utf8.RuneCountInString(out)
	if n <= maxChars {
		return out
	}
	sum := sha256.Sum256([]byte(out))
	name := filepath.Join(dir, hex.EncodeToString(sum[:4])+".txt")
	where := "It could not be saved"
	if err := saveOutput(dir, name, out); err != nil {
		where += ": " + err.Error()
	} else if dropped > 0 {
		where = fmt.Sprintf("The output the terminal kept (%d lines: the start and the end, with a line marking the %d bytes left out between them) is in %s: read parts of it with sed -n 'START,ENDp' or search it with grep", strings.Count(out, "\n")+1, dropped, name)
	} else {
		where = fmt.Sprintf("The full output (%d lines) is in %s: read parts of it with sed -n 'START,ENDp' or search it with grep", strings.Count(out, "\n")+1, name)
	}
	note := "\n\n<response clipped: %d characters in the middle of the output were left out. " + where + ".>\n\n"
	keep := maxChars - len(note) - 20
	headN := keep / 2
	tailN := keep - headN
	head := firstRunes(out, headN)
	tail := lastRunes(out, tailN)
	left := n - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	return head + fmt.Sprintf(note, left) + tail
}

func saveOutput(dir, name, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(out)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), name)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

func firstRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

func lastRunes(s string, n int) string {
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
