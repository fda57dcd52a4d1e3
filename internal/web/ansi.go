package web

import (
	"strconv"
	"strings"
)

// Terminal output keeps its colours: SGR escape sequences become spans with classes (the
// stylesheet maps them to colours that read in light and dark), every other control sequence
// is dropped, and the text stays text, escaped by the template like everything else.

// span is a run of output in one style; Class is empty for the default style.
type span struct {
	Class string
	Text  string
}

// sgr is the style the output is in.
type sgr struct {
	fg, bg                        int // 0: default; 1..16: the 16 colours (1 is black)
	bold, dim, italic, under, inv bool
}

func (s sgr) class() string {
	var c []string
	fg, bg := s.fg, s.bg
	if s.inv {
		fg, bg = bg, fg
		if fg == 0 {
			fg = 17 // the background colour as text
		}
		if bg == 0 {
			bg = 18 // the text colour as background
		}
	}
	if fg > 0 {
		c = append(c, "f"+strconv.Itoa(fg-1))
	}
	if bg > 0 {
		c = append(c, "b"+strconv.Itoa(bg-1))
	}
	if s.bold {
		c = append(c, "bo")
	}
	if s.dim {
		c = append(c, "di")
	}
	if s.italic {
		c = append(c, "it")
	}
	if s.under {
		c = append(c, "un")
	}
	return strings.Join(c, " ")
}

// ansiSpans splits terminal output into styled spans.
func ansiSpans(s string) []span {
	var out []span
	var cur sgr
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		cls := cur.class()
		if n := len(out); n > 0 && out[n-1].Class == cls {
			out[n-1].Text += text.String()
		} else {
			out = append(out, span{Class: cls, Text: text.String()})
		}
		text.Reset()
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != 0x1b {
			if c < 0x20 && c != '\n' && c != '\t' {
				i++ // other control characters show nothing
				continue
			}
			text.WriteByte(c)
			i++
			continue
		}
		// An escape sequence: CSI (ESC [ params final), OSC (ESC ] ... BEL or ST), or a
		// two-byte escape.
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j >= len(s) {
				i = len(s)
				continue
			}
			if s[j] == 'm' {
				flush()
				cur = cur.apply(s[i+2 : j])
			}
			i = j + 1
		case ']', 'P', 'X', '^', '_':
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j + 1
		case '(', ')', '*', '+':
			i += 3
		default:
			i += 2
		}
	}
	flush()
	return out
}

// apply returns the style after an SGR sequence's parameters.
func (s sgr) apply(params string) sgr {
	if params == "" {
		return sgr{}
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	for k := 0; k < len(ps); k++ {
		n, err := strconv.Atoi(ps[k])
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			s = sgr{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.under = true
		case n == 7:
			s.inv = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.under = false
		case n == 27:
			s.inv = false
		case n >= 30 && n <= 37:
			s.fg = n - 30 + 1
		case n >= 90 && n <= 97:
			s.fg = n - 90 + 9
		case n == 39:
			s.fg = 0
		case n >= 40 && n <= 47:
			s.bg = n - 40 + 1
		case n >= 100 && n <= 107:
			s.bg = n - 100 + 9
		case n == 49:
			s.bg = 0
		case n == 38 || n == 48:
			c, used := extendedColour(ps[k+1:])
			k += used
			if n == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
	return s
}

// extendedColour reads a 256-colour (5;n) or true-colour (2;r;g;b) parameter and maps it to
// the nearest of the 16 colours (the stylesheet has no others: inline styles are not
// allowed by the page's policy). It returns the colour (0: default) and the parameters used.
func extendedColour(ps []string) (int, int) {
	num := func(i int) int {
		if i >= len(ps) {
			return 0
		}
		n, _ := strconv.Atoi(ps[i])
		return n
	}
	switch num(0) {
	case 5:
		n := num(1)
		switch {
		case n < 16:
			return n + 1, 2
		case n >= 232:
			g := (n-232)*10 + 8
			return nearest16(g, g, g), 2
		default:
			n -= 16
			steps := []int{0, 95, 135, 175, 215, 255}
			return nearest16(steps[n/36%6], steps[n/6%6], steps[n%6]), 2
		}
	case 2:
		return nearest16(num(1), num(2), num(3)), 4
	}
	return 0, 1
}

// palette16 is the xterm palette the 16 colours are named after.
var palette16 = [16][3]int{
	{0, 0, 0}, {205, 0, 0}, {0, 205, 0}, {205, 205, 0}, {0, 0, 238}, {205, 0, 205}, {0, 205, 205}, {229, 229, 229},
	{127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0}, {92, 92, 255}, {255, 0, 255}, {0, 255, 255}, {255, 255, 255},
}

func nearest16(r, g, b int) int {
	best, bestD := 0, 1<<30
	for i, p := range palette16 {
		d := (p[0]-r)*(p[0]-r) + (p[1]-g)*(p[1]-g) + (p[2]-b)*(p[2]-b)
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best + 1
}
