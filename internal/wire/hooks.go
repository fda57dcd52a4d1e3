package wire

import (
	"reflect"
	"unicode/utf8"
)

// Enum is implemented (value receiver) by string types with a closed set of
// values. Decoding rejects any other value with pydantic's "enum" problem and
// the schema lists the values.
type Enum interface{ EnumValues() []string }

// Strict is implemented (value receiver) by struct types that reject unknown
// keys, like a pydantic model with extra="forbid".
type Strict interface{ WireStrict() }

// Unmarshaler is implemented (pointer receiver) by types that decode
// themselves from the generic JSON value (nil, bool, json.Number, string,
// []any or map[string]any), for example unions of a string and an object.
// Problems go through d, so they get located like any other.
type Unmarshaler interface{ DecodeWire(v any, d *Decoder) }

// Validator is implemented (pointer or value receiver) by types with
// cross-field rules. ValidateWire runs after the value decoded without
// problems, nested values first, like a pydantic after-validator.
type Validator interface{ ValidateWire(c *Checker) }

// Schemer is implemented (value or pointer receiver) by types that describe
// their own JSON Schema, typically the same types that implement
// [Unmarshaler]. The schema is inlined wherever the type is used; use [Ref]
// inside it to point at another type's component.
type Schemer interface{ WireSchema() map[string]any }

var (
	enumType        = reflect.TypeFor[Enum]()
	strictType      = reflect.TypeFor[Strict]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	validatorType   = reflect.TypeFor[Validator]()
	schemerType     = reflect.TypeFor[Schemer]()
)

// Decoder is handed to [Unmarshaler.DecodeWire]. It remembers where in the
// input the value sits, so custom decoders report problems and decode parts
// of the value with correct locations without knowing them.
type Decoder struct {
	s   *state
	loc []any
}

// Decode decodes the generic value v into dst (a non-nil pointer) with the
// default rules at d's location, and reports whether it added no problems.
// If dst's type is itself an [Unmarshaler], its DecodeWire is not called
// again, so a type may decode its object form into itself; its ValidateWire
// then runs once, after the outer DecodeWire returns without problems.
func (d *Decoder) Decode(v any, dst any) bool {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("wire: Decoder.Decode needs a non-nil pointer, got " + rv.Kind().String())
	}
	n := len(d.s.problems)
	saved := d.s.loc
	d.s.loc = append(make([]any, 0, len(d.loc)+4), d.loc...)
	ev := rv.Elem()
	d.s.decode(v, ev, infoOf(ev.Type()), noOpts, true)
	d.s.loc = saved
	return len(d.s.problems) == n
}

// Problem reports a problem at d's location extended by loc.
func (d *Decoder) Problem(typ, msg string, loc ...any) {
	d.s.add(d.loc, typ, msg, loc...)
}

// At returns a Decoder for a part of the value, e.g. d.At("url").
func (d *Decoder) At(loc ...any) *Decoder {
	return &Decoder{s: d.s, loc: join(d.loc, loc)}
}

// Loc returns a copy of d's location, e.g. ["body", "mcp_config", 0].
func (d *Decoder) Loc() []any { return join(d.loc, nil) }

// Checker collects the problems found by [Validator.ValidateWire], located
// relative to the value being validated.
type Checker struct {
	s   *state
	loc []any
}

// NewChecker returns a Checker whose problems start at loc, for validating
// input that did not come through this package (path parameters, headers).
func NewChecker(loc ...any) *Checker {
	return &Checker{s: &state{}, loc: join(loc, nil)}
}

// Add reports a problem at the checker's location extended by loc.
func (c *Checker) Add(typ, msg string, loc ...any) {
	c.s.add(c.loc, typ, msg, loc...)
}

// ValueError reports msg the way pydantic reports a ValueError raised in a
// validator: type "value_error" and "Value error, " before the message.
func (c *Checker) ValueError(msg string, loc ...any) {
	c.Add("value_error", "Value error, "+msg, loc...)
}

// MaxLen reports str at loc when it has more than n characters, as the maxlen= option does
// for a field, for the strings a tag cannot reach (a map's keys and values).
func (c *Checker) MaxLen(str string, n int, loc ...any) {
	if utf8.RuneCountInString(str) > n {
		c.Add("string_too_long", msgStringTooLong(n), loc...)
	}
}

// At returns a Checker for a part of the value; problems go to the same list.
func (c *Checker) At(loc ...any) *Checker {
	return &Checker{s: c.s, loc: join(c.loc, loc)}
}

// Err returns the problems collected so far as an *Error, or nil if none.
func (c *Checker) Err() error { return c.s.err() }

// join returns a fresh slice holding a followed by b; locations are copied
// because the walk reuses its location stack.
func join(a, b []any) []any {
	out := make([]any, 0, len(a)+len(b))
	out = append(out, a...)
	return append(out, b...)
}
