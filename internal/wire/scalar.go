package wire

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// setInt parses an integer literal into rv, an int or uint kind. JSON
// numbers may be written as floats (1.0, 1e3) and are accepted when
// integral, as in pydantic's lax mode; query strings must be plain integers.
// Values outside the Go type's range get pydantic's bound problems, which
// tell the client the limit instead of a Go overflow error.
func (s *state) setInt(lit string, rv reflect.Value, fromJSON bool, o *opts) {
	n, typ, msg := parseInt(lit, rv.Type(), fromJSON)
	if typ != "" {
		s.add(s.loc, typ, msg)
		return
	}
	if n.kind == numUint {
		rv.SetUint(n.u)
	} else {
		rv.SetInt(n.i)
	}
	s.checkNum(n, o)
}

func parseInt(lit string, t reflect.Type, fromJSON bool) (n num, typ, msg string) {
	over := 0 // -1: below the type's range, +1: above it
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		n = num{kind: numInt, i: i}
	} else if u, err := strconv.ParseUint(strings.TrimPrefix(lit, "+"), 10, 64); err == nil {
		n = num{kind: numUint, u: u}
	} else if isIntLiteral(lit) {
		over = literalSign(lit)
	} else if !fromJSON {
		return n, "int_parsing", msgIntParsing
	} else {
		f, err := strconv.ParseFloat(lit, 64)
		switch {
		case math.IsInf(f, 0):
			over = literalSign(lit)
		case err != nil:
			return n, "int_type", msgInt
		case f != math.Trunc(f):
			return n, "int_from_float", msgIntFromFloat
		case f >= -(1<<63) && f < 1<<63:
			n = num{kind: numInt, i: int64(f)}
		case f >= 0 && f < 1<<64:
			n = num{kind: numUint, u: uint64(f)}
		default:
			over = literalSign(lit)
		}
	}

	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		hi := uint64(math.MaxUint64) >> (64 - bits)
		switch {
		case over < 0, over == 0 && n.kind == numInt && n.i < 0:
			return n, "greater_than_equal", msgGE("0")
		case over > 0, n.kind == numUint && n.u > hi, n.kind == numInt && uint64(n.i) > hi:
			return n, "less_than_equal", msgLE(strconv.FormatUint(hi, 10))
		}
		if n.kind == numInt {
			n = num{kind: numUint, u: uint64(n.i)}
		}
		return n, "", ""
	}
	lo, hi := int64(-1)<<(bits-1), int64(math.MaxInt64)>>(64-bits)
	switch {
	case over < 0, over == 0 && n.kind == numInt && n.i < lo:
		return n, "greater_than_equal", msgGE(strconv.FormatInt(lo, 10))
	case over > 0, n.kind == numUint, n.i > hi:
		return n, "less_than_equal", msgLE(strconv.FormatInt(hi, 10))
	}
	return n, "", ""
}

func isIntLiteral(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func literalSign(s string) int {
	if strings.HasPrefix(s, "-") {
		return -1
	}
	return 1
}

// setFloat parses a number literal into a float kind. Infinities and NaN
// are rejected: JSON cannot carry them back out.
func (s *state) setFloat(lit string, rv reflect.Value, o *opts) {
	f, err := strconv.ParseFloat(lit, rv.Type().Bits())
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		s.add(s.loc, "float_parsing", msgFloatParsing)
		return
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s.add(s.loc, "finite_number", msgFinite)
		return
	}
	rv.SetFloat(f)
	s.checkNum(num{kind: numFloat, f: f}, o)
}

func (s *state) setTime(str string, rv reflect.Value) {
	t, reason := parseDateTime(str)
	if reason != "" {
		s.add(s.loc, "datetime_from_date_parsing", msgDatetimeParse+reason)
		return
	}
	rv.Set(reflect.ValueOf(t))
}

// setText decodes one query-string value (or a default= tag) into a scalar
// type, with the lax string parsing FastAPI applies to query parameters.
func (s *state) setText(text string, rv reflect.Value, ti *typeInfo, o *opts) {
	switch ti.kind {
	case kindString:
		rv.SetString(text)
		s.checkStrLen(text, o)
	case kindEnum:
		if _, ok := ti.enumSet[text]; !ok {
			s.add(s.loc, "enum", ti.enumMsg)
			return
		}
		rv.SetString(text)
		s.checkStrLen(text, o)
	case kindBool:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true", "1", "yes", "on", "t", "y":
			rv.SetBool(true)
		case "false", "0", "no", "off", "f", "n":
			rv.SetBool(false)
		default:
			s.add(s.loc, "bool_parsing", msgBoolParsing)
		}
	case kindInt, kindUint:
		s.setInt(strings.TrimSpace(text), rv, false, o)
	case kindFloat:
		s.setFloat(strings.TrimSpace(text), rv, o)
	case kindTime:
		s.setTime(text, rv)
	case kindTextUnmarshaler:
		if rv.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(text)) != nil {
			s.add(s.loc, "value_error", "Value error, invalid "+typeWord(ti.t))
		}
	default:
		panic("wire: cannot decode text into " + ti.t.String())
	}
}

// textKind reports whether values of kind k can be written as one string,
// i.e. can be a query parameter or carry a default= tag.
func textKind(k kind) bool {
	switch k {
	case kindString, kindEnum, kindBool, kindInt, kindUint, kindFloat, kindTime, kindTextUnmarshaler:
		return true
	}
	return false
}

// parseDefault parses a default= tag once, when the type is first seen, so a
// bad default fails at start-up rather than on some request.
func parseDefault(t reflect.Type, text string) (reflect.Value, error) {
	dt := deref(t)
	if !textKind(classify(dt)) {
		return reflect.Value{}, fmt.Errorf("default= is not supported for %s", t)
	}
	v := reflect.New(dt).Elem()
	s := &state{}
	s.setText(text, v, infoOf(dt), noOpts)
	if len(s.problems) > 0 {
		return reflect.Value{}, fmt.Errorf("default %q: %s", text, s.problems[0].Msg)
	}
	return v, nil
}
