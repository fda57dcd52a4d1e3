package llm

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// errorMessage pulls the human message and the machine code (type and code fields, joined)
// out of an error response body.
func errorMessage(body []byte) (msg, code string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    string          `json:"type"`
		Code    any             `json:"code"`
	}
	if json.Unmarshal(body, &v) != nil {
		return clip(strings.TrimSpace(string(body))), ""
	}
	code = joinNonEmpty(v.Type, codeString(v.Code))
	var nested struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	var s string
	switch {
	case len(v.Error) > 0 && json.Unmarshal(v.Error, &nested) == nil && (nested.Message != "" || nested.Type != ""):
		return clip(nested.Message), joinNonEmpty(nested.Type, codeString(nested.Code), code)
	case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil:
		return clip(s), code
	case v.Message != "":
		return clip(v.Message), code
	case len(v.Detail) > 0:
		if json.Unmarshal(v.Detail, &s) == nil {
			return clip(s), code
		}
		return clip(string(v.Detail)), code
	}
	return clip(strings.TrimSpace(string(body))), code
}

func codeString(c any) string {
	if s, ok := c.(string); ok {
		return s
	}
	return ""
}

func joinNonEmpty(ss ...string) string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func clip(s string) string {
	if len(s) <= maxMsg {
		return s
	}
	cut := maxMsg
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
