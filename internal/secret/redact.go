package secret

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Mask replaces a secret value wherever it would be shown.
const Mask = "<secret-hidden>"

// minRedactLen keeps very short values from masking ordinary words.
const minRedactLen = 6

// Redactor masks a fixed set of secret values in text and in JSON. It is immutable, so safe
// for concurrent use; the zero value and nil mask nothing.
type Redactor struct {
	// values are the secrets, longest first, so that a secret that contains another is
	// masked whole.
	values []string
	// encoded holds, for each value, the forms it takes inside a JSON string: with and
	// without HTML escaping (a value with no character to escape has one form).
	encoded [][][]byte
}

// NewRedactor returns a Redactor for values. Values shorter than six characters are
// ignored, and so are duplicates.
func NewRedactor(values ...string) *Redactor {
	var vs []string
	for _, v := range values {
		if len(v) >= minRedactLen && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{values: vs, encoded: make([][][]byte, len(vs))}
	for i, v := range vs {
		for _, html := range []bool{true, false} {
			form := jsonString(v, html)
			if !slices.ContainsFunc(r.encoded[i], func(f []byte) bool { return bytes.Equal(f, form) }) {
				r.encoded[i] = append(r.encoded[i], form)
			}
		}
	}
	return r
}

// jsonString is v encoded as the inside of a JSON string.
func jsonString(v string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return b[1 : len(b)-1]
}

// Size is about how many bytes the redactor holds: its values and their encoded forms.
func (r *Redactor) Size() int {
	if r == nil {
		return 0
	}
	n := 0
	for i, v := range r.values {
		n += len(v)
		for _, f := range r.encoded[i] {
			n += len(f)
		}
	}
	return n
}

// Empty reports whether the redactor masks nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.values) == 0 }

// Redact returns s with every secret replaced by Mask.
func (r *Redactor) Redact(s string) string {
	if r.Empty() {
		return s
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

// RedactJSON returns the JSON text b with every secret masked wherever it appears inside a
// string (object keys included), and b itself when no secret is in it. The result is valid
// JSON when b is.
func (r *Redactor) RedactJSON(b []byte) []byte {
	if r.Empty() {
		return b
	}
	out := b
	for _, forms := range r.encoded {
		for _, f := range forms {
			if bytes.Contains(out, f) {
				out = bytes.ReplaceAll(out, f, []byte(Mask))
			}
		}
	}
	if len(out) == len(b) && bytes.Equal(out, b) {
		return b
	}
	if json.Valid(out) || !json.Valid(b) {
		return out
	}
	// A secret that spans JSON syntax (a quote and what follows it) was cut out with that
	// syntax: mask the decoded strings instead, at the price of re-encoding.
	return r.redactDecoded(b)
}

// redactDecoded masks the secrets in every string of the JSON text b by decoding and
// encoding it again.
func (r *Redactor) redactDecoded(b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(r.redactValue(v))
	if err != nil {
		return b
	}
	return out
}

func (r *Redactor) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return r.Redact(x)
	case []any:
		for i := range x {
			x[i] = r.redactValue(x[i])
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.Redact(k)] = r.redactValue(e)
		}
		return m
	}
	return v
}
