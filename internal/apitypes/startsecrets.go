package apitypes

import (
	"encoding/json"
	"slices"

	"github.com/agentd/agentd/internal/wire"
)

// StartSecrets are the secrets a conversation's agent may use, from its start request. As in
// OpenHands, an object of name to value gives secrets inline; agentd also takes a list of the
// names of the caller's stored secrets (POST /api/v1/secrets), and null as a value in the
// object names a stored secret too.
type StartSecrets struct {
	// Inline are the values given in the request, by name.
	Inline map[string]string
	// Stored name the caller's stored secrets.
	Stored []string
	// list: the request sent a list, which the echo keeps.
	list bool
}

// DecodeWire accepts the object and the list.
func (s *StartSecrets) DecodeWire(v any, d *wire.Decoder) {
	switch x := v.(type) {
	case []any:
		s.list = true
		for i, e := range x {
			name, ok := e.(string)
			if !ok {
				d.Problem("string_type", "Input should be a valid string", i)
				continue
			}
			s.Stored = append(s.Stored, name)
		}
	case map[string]any:
		for name, e := range x {
			switch val := e.(type) {
			case nil:
				s.Stored = append(s.Stored, name)
			case string:
				if s.Inline == nil {
					s.Inline = map[string]string{}
				}
				s.Inline[name] = val
			default:
				d.Problem("string_type", "Input should be a valid string or null", name)
			}
		}
		slices.Sort(s.Stored)
	default:
		d.Problem("dict_type", "Input should be an object of secret names to values, or a list of names of stored secrets")
	}
}

// MaskSecrets returns s with every inline value masked; the names of stored secrets are no
// secret.
func (s StartSecrets) MaskSecrets(mask string) any {
	out := StartSecrets{Stored: s.Stored, list: s.list}
	if s.Inline != nil {
		out.Inline = make(map[string]string, len(s.Inline))
		for name := range s.Inline {
			out.Inline[name] = mask
		}
	}
	return out
}

// MarshalJSON shows the secrets without their values: the list of names, or the object with
// each inline value masked and each stored secret null.
func (s StartSecrets) MarshalJSON() ([]byte, error) {
	if s.list {
		return json.Marshal(append([]string{}, s.Stored...))
	}
	m := make(map[string]*string, len(s.Inline)+len(s.Stored))
	for name := range s.Inline {
		m[name] = ptrTo(wire.Mask)
	}
	for _, name := range s.Stored {
		m[name] = nil
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a shown request back (the echo of a start task).
func (s *StartSecrets) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*s = StartSecrets{Stored: list, list: true}
		return nil
	}
	var m map[string]*string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = StartSecrets{}
	for name, v := range m {
		if v == nil {
			s.Stored = append(s.Stored, name)
			continue
		}
		if s.Inline == nil {
			s.Inline = map[string]string{}
		}
		s.Inline[name] = *v
	}
	slices.Sort(s.Stored)
	return nil
}

// WireSchema documents the union.
func (StartSecrets) WireSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "object", "additionalProperties": map[string]any{"type": []any{"string", "null"}, "writeOnly": true},
			"description": "Secret name to its value (shown masked), or to null for the caller's stored secret of that name."},
		map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "Names of the caller's stored secrets."},
	}}
}

func ptrTo[T any](v T) *T { return &v }
