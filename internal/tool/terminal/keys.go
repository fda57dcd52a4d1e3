package terminal

import "strings"

// namedKeys are the keys is_input may name, as the bytes a terminal sends for them.
var namedKeys = map[string]string{
	"UP":    "\x1b[A",
	"DOWN":  "\x1b[B",
	"RIGHT": "\x1b[C",
	"LEFT":  "\x1b[D",
	"HOME":  "\x1b[H",
	"END":   "\x1b[F",
	"PGUP":  "\x1b[5~",
	"PGDN":  "\x1b[6~",
	"TAB":   "\t",
	"ESC":   "\x1b",
	"BS":    "\x7f",
	"ENTER": "\r",
}

// keyBytes returns the bytes of a special key named by s (C-c, C-<letter>, UP, ...), and
// whether s names one. Names are case-insensitive.
func keyBytes(s string) (string, bool) {
	k := strings.ToUpper(strings.TrimSpace(s))
	if b, ok := namedKeys[k]; ok {
		return b, true
	}
	if len(k) == 3 && strings.HasPrefix(k, "C-") && k[2] >= 'A' && k[2] <= 'Z' {
		return string(rune(k[2] & 0x1f)), true
	}
	return "", false
}
