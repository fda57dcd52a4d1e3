package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// Problem is one validation failure in pydantic v2's shape, so that a list of
// them can be served as FastAPI's {"detail": [...]} body unchanged.
type Problem struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"` // strings (field names, "body", "query") and ints (list indices)
	Msg  string `json:"msg"`
}

// Error is returned by every decode/validate function when the input is
// invalid; it holds ALL problems found, not just the first, in the order the
// walk met them.
type Error struct{ Problems []Problem }

// Error joins the problems into one line for logs. Like the problems
// themselves it never includes input values.
func (e *Error) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	b.WriteString("wire: ")
	b.WriteString(strconv.Itoa(n))
	if n == 1 {
		b.WriteString(" validation error")
	} else {
		b.WriteString(" validation errors")
	}
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		for j, l := range p.Loc {
			if j > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, l)
		}
		b.WriteString(": ")
		b.WriteString(p.Msg)
		b.WriteString(" [")
		b.WriteString(p.Type)
		b.WriteByte(']')
	}
	return b.String()
}

// Messages shared by the JSON and query decoders, worded exactly as pydantic
// v2 words them.
const (
	msgMissing       = "Field required"
	msgExtra         = "Extra inputs are not permitted"
	msgString        = "Input should be a valid string"
	msgInt           = "Input should be a valid integer"
	msgIntFromFloat  = "Input should be a valid integer, got a number with a fractional part"
	msgIntParsing    = "Input should be a valid integer, unable to parse string as an integer"
	msgFloat         = "Input should be a valid number"
	msgFloatParsing  = "Input should be a valid number, unable to parse string as a number"
	msgFinite        = "Input should be a finite number"
	msgBool          = "Input should be a valid boolean"
	msgBoolParsing   = "Input should be a valid boolean, unable to interpret input"
	msgList          = "Input should be a valid list"
	msgDict          = "Input should be a valid dictionary"
	msgModel         = "Input should be a valid dictionary or object to extract fields from"
	msgDatetime      = "Input should be a valid datetime"
	msgDatetimeParse = "Input should be a valid datetime or date, "
	msgJSONInvalid   = "JSON decode error"
)

// plural returns "s" unless n is 1, mirroring pydantic's expected_plural.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func msgGE(bound string) string { return "Input should be greater than or equal to " + bound }
func msgLE(bound string) string { return "Input should be less than or equal to " + bound }

func msgStringTooShort(n int) string {
	return "String should have at least " + strconv.Itoa(n) + " character" + plural(n)
}

func msgStringTooLong(n int) string {
	return "String should have at most " + strconv.Itoa(n) + " character" + plural(n)
}

// msgTooShort and msgTooLong take the container word pydantic uses: "List"
// for sequences and "Dictionary" for mappings.
func msgTooShort(what string, n, got int) string {
	return what + " should have at least " + strconv.Itoa(n) + " item" + plural(n) +
		" after validation, not " + strconv.Itoa(got)
}

func msgTooLong(what string, n, got int) string {
	return what + " should have at most " + strconv.Itoa(n) + " item" + plural(n) +
		" after validation, not " + strconv.Itoa(got)
}

// msgEnum lists the allowed values the way pydantic does:
// "Input should be 'a', 'b' or 'c'".
func msgEnum(values []string) string {
	var b strings.Builder
	b.WriteString("Input should be ")
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteByte('\'')
		b.WriteString(v)
		b.WriteByte('\'')
	}
	return b.String()
}
