package wire

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// opts are the options of one field's wire tag. They are parsed once per type
// and cached with it, so decoding never looks at tag strings.
type opts struct {
	required bool
	secret   bool
	nullable bool
	min, max *bound
	minLen   int // -1 when unset
	maxLen   int // -1 when unset

	hasDefault  bool
	defaultText string
}

// bound is a min= or max= limit. The tag text is kept because pydantic's
// message prints the limit as written ("1", "0.5").
type bound struct {
	text    string
	f       float64
	i       int64
	isInt   bool // the limit is integral and fits int64, so ints compare exactly
	jsonNum string
}

var noOpts = &opts{minLen: -1, maxLen: -1}

// parseWireTag parses `wire:"required,min=1,default=x"`. Unknown options are
// errors so that a typo in a tag fails loudly instead of silently dropping a
// constraint.
func parseWireTag(tag string) (*opts, error) {
	o := &opts{minLen: -1, maxLen: -1}
	if tag == "" {
		return o, nil
	}
	rest := tag
	for rest != "" {
		var part string
		if strings.HasPrefix(rest, "default=") {
			// The default takes the rest of the tag so that it may hold commas.
			part, rest = rest, ""
		} else {
			part, rest, _ = strings.Cut(rest, ",")
		}
		part = strings.TrimSpace(part)
		key, val, hasVal := strings.Cut(part, "=")
		var err error
		switch key {
		case "":
			continue
		case "required":
			o.required = true
		case "secret":
			o.secret = true
		case "nullable":
			o.nullable = true
		case "min":
			o.min, err = parseBound(val)
		case "max":
			o.max, err = parseBound(val)
		case "minlen":
			o.minLen, err = parseLen(val)
		case "maxlen":
			o.maxLen, err = parseLen(val)
		case "default":
			o.hasDefault, o.defaultText = true, val
		default:
			return nil, fmt.Errorf("unknown wire option %q", key)
		}
		if err != nil {
			return nil, fmt.Errorf("wire option %q: %w", key, err)
		}
		if !hasVal && (key == "min" || key == "max" || key == "minlen" || key == "maxlen") {
			return nil, fmt.Errorf("wire option %q needs a value", key)
		}
	}
	return o, nil
}

func parseBound(s string) (*bound, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("bad number %q", s)
	}
	b := &bound{text: s, f: f, jsonNum: strconv.FormatFloat(f, 'g', -1, 64)}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		b.i, b.isInt, b.jsonNum = i, true, strconv.FormatInt(i, 10)
	}
	return b, nil
}

func parseLen(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad length %q", s)
	}
	return n, nil
}

// num is a decoded number in the representation that compares exactly
// against a bound: ints stay ints so large int64 values do not round.
type num struct {
	kind uint8 // numFloat, numInt or numUint
	f    float64
	i    int64
	u    uint64
}

const (
	numFloat uint8 = iota
	numInt
	numUint
)

// cmp returns -1, 0 or +1 as n is below, at or above b.
func (n num) cmp(b *bound) int {
	switch {
	case n.kind == numInt && b.isInt:
		return cmp3(n.i < b.i, n.i > b.i)
	case n.kind == numUint && b.isInt:
		if b.i < 0 {
			return 1
		}
		return cmp3(n.u < uint64(b.i), n.u > uint64(b.i))
	}
	var f float64
	switch n.kind {
	case numInt:
		f = float64(n.i)
	case numUint:
		f = float64(n.u)
	default:
		f = n.f
	}
	return cmp3(f < b.f, f > b.f)
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// checkNum reports min=/max= violations, pydantic's ge/le.
func (s *state) checkNum(n num, o *opts) {
	if o.min != nil && n.cmp(o.min) < 0 {
		s.add(s.loc, "greater_than_equal", msgGE(o.min.text))
	}
	if o.max != nil && n.cmp(o.max) > 0 {
		s.add(s.loc, "less_than_equal", msgLE(o.max.text))
	}
}

// checkStrLen reports minlen=/maxlen= violations on a string, counted in
// characters as Python counts them, not bytes.
func (s *state) checkStrLen(str string, o *opts) {
	if o.minLen < 0 && o.maxLen < 0 {
		return
	}
	n := utf8.RuneCountInString(str)
	if o.minLen >= 0 && n < o.minLen {
		s.add(s.loc, "string_too_short", msgStringTooShort(o.minLen))
	}
	if o.maxLen >= 0 && n > o.maxLen {
		s.add(s.loc, "string_too_long", msgStringTooLong(o.maxLen))
	}
}

// checkItems reports minlen=/maxlen= violations on a list or dictionary.
func (s *state) checkItems(what string, n int, o *opts) {
	if o.minLen >= 0 && n < o.minLen {
		s.add(s.loc, "too_short", msgTooShort(what, o.minLen, n))
	}
	if o.maxLen >= 0 && n > o.maxLen {
		s.add(s.loc, "too_long", msgTooLong(what, o.maxLen, n))
	}
}
