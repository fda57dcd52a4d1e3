package secret

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := NewRedactor("sk-live-0123456789", "sk-live-0123456789-extended", "short", "", "ghp_token<&>value")
	tests := []struct{ in, want string }{
		{"key sk-live-0123456789 here", "key " + Mask + " here"},
		// The longer secret is masked whole, not as the shorter one plus a tail.
		{"sk-live-0123456789-extended!", Mask + "!"},
		{"too short to mask: short", "too short to mask: short"},
		{"a ghp_token<&>value b", "a " + Mask + " b"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if got := nilR.Redact("sk-live-0123456789"); got != "sk-live-0123456789" || !nilR.Empty() {
		t.Errorf("a nil redactor changed %q", got)
	}
}

// TestRedactJSON: a secret is masked in JSON however it was encoded (with HTML escaping or
// without, with quotes and backslashes escaped), in keys and values, and the result stays
// valid JSON that decodes to the masked strings.
func TestRedactJSON(t *testing.T) {
	secrets := []string{`tok"en\with<html>&quotes`, "plain-secret-value", "ünïcødé-secret"}
	r := NewRedactor(secrets...)
	doc := map[string]any{
		"output":   "before " + secrets[0] + " after",
		"nested":   []any{map[string]any{"text": secrets[1]}, 42, true, nil},
		secrets[2]: "a key that is a secret",
		"number":   json.Number("12345678901234567890"),
	}
	for _, html := range []bool{true, false} {
		b := encode(t, doc, html)
		out := r.RedactJSON(b)
		if !json.Valid(out) {
			t.Fatalf("html=%v: invalid JSON %s", html, out)
		}
		for _, s := range secrets {
			if strings.Contains(decodeAll(t, out), s) {
				t.Fatalf("html=%v: %q still in %s", html, s, out)
			}
		}
		if !strings.Contains(string(out), "12345678901234567890") {
			t.Fatalf("html=%v: the number changed: %s", html, out)
		}
	}
	clean := []byte(`{"a":"nothing secret"}`)
	if got := r.RedactJSON(clean); &got[0] != &clean[0] {
		t.Error("JSON without a secret was copied")
	}
	// A secret that spans JSON syntax: masked in the decoded strings, the JSON kept valid.
	span := NewRedactor(`abc","def`)
	out := span.RedactJSON([]byte(`{"x":"abc","y":"def","z":"abc\",\"def"}`))
	if !json.Valid(out) || strings.Contains(decodeAll(t, out), `abc","def`) {
		t.Fatalf("a secret spanning syntax: %s", out)
	}
	if !strings.Contains(string(out), `"x":"abc"`) {
		t.Fatalf("a string that merely looks like part of the secret was changed: %s", out)
	}
}

func encode(t *testing.T, v any, html bool) []byte {
	t.Helper()
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return []byte(sb.String())
}

// decodeAll returns every string in the JSON text b, keys included, joined by newlines.
func decodeAll(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return strings.Join(out, "\n")
}
