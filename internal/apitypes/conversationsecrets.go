package apitypes

import (
	"net/url"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// ConversationSecretsRequest is the body of an agent server's
// POST /api/conversations/{id}/secrets (OpenHands' UpdateSecretsRequest).
type ConversationSecretsRequest struct {
	Secrets SecretSources `json:"secrets" wire:"required"`
}

// SecretSources are secrets by name, each as OpenHands' SDK sends a SecretSource: its value
// as a string, an object with the value (a StaticSecret, or {"value": ...}), or a
// LookupSecret whose url is a secret route of the sandbox's agent server
// (…/api/settings/secrets/{name}, or the sandbox-scoped
// …/api/v1/sandboxes/{sandbox_id}/settings/secrets/{name}): the name there is looked up among
// the secrets of the conversation's sandbox, and no URL is fetched. Descriptions and a
// LookupSecret's headers are accepted and not kept.
type SecretSources struct {
	// Inline are the values given, by name.
	Inline map[string]string
	// Lookups map a name to the name of the sandbox's secret its LookupSecret names.
	Lookups map[string]string
}

// DecodeWire reads the object of names to sources. No problem quotes a value.
func (s *SecretSources) DecodeWire(v any, d *wire.Decoder) {
	m, ok := v.(map[string]any)
	if !ok {
		d.Problem("dict_type", "Input should be an object of secret names to secrets")
		return
	}
	for name, e := range m {
		switch src := e.(type) {
		case string:
			s.inline(name, src)
		case map[string]any:
			s.decodeSource(name, src, d.At(name))
		default:
			d.Problem("model_type", "Input should be a string or an object (StaticSecret or LookupSecret)", name)
		}
	}
}

// decodeSource reads one secret given as an object.
func (s *SecretSources) decodeSource(name string, src map[string]any, d *wire.Decoder) {
	kind, _ := src["kind"].(string)
	if kind == "" {
		if _, ok := src["url"]; ok {
			kind = "LookupSecret"
		} else {
			kind = "StaticSecret"
		}
	}
	switch kind {
	case "StaticSecret":
		value, ok := src["value"].(string)
		if !ok {
			d.Problem("string_type", "Input should be a valid string: the secret's value", "value")
			return
		}
		s.inline(name, value)
	case "LookupSecret":
		raw, ok := src["url"].(string)
		if !ok {
			d.Problem("string_type", "Input should be a valid string", "url")
			return
		}
		looked, ok := lookupName(raw)
		if !ok {
			d.Problem("value_error", "Value error, agentd fetches no secret from a URL: a LookupSecret must point to a secret of the "+
				"sandbox's agent server (…/api/settings/secrets/{name}, as GET /api/settings/secrets lists them); send any other secret's value", "url")
			return
		}
		if s.Lookups == nil {
			s.Lookups = map[string]string{}
		}
		s.Lookups[name] = looked
	default:
		d.Problem("union_tag_invalid", "Input tag '"+kind+"' found using 'kind' does not match any of the expected tags: 'StaticSecret', 'LookupSecret'", "kind")
	}
}

func (s *SecretSources) inline(name, value string) {
	if s.Inline == nil {
		s.Inline = map[string]string{}
	}
	s.Inline[name] = value
}

// lookupName reads the name of the secret a LookupSecret's URL names, if the URL is one of the
// secret routes of a sandbox: …/api/settings/secrets/{name} or
// …/api/v1/sandboxes/{sandbox_id}/settings/secrets/{name}.
func lookupName(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	seg := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	n := len(seg)
	if n < 4 || seg[n-1] == "" || seg[n-2] != "secrets" || seg[n-3] != "settings" {
		return "", false
	}
	agentServer := seg[n-4] == "api"
	sandboxScoped := n >= 7 && seg[n-5] == "sandboxes" && seg[n-6] == "v1" && seg[n-7] == "api" && seg[n-4] != ""
	if !agentServer && !sandboxScoped {
		return "", false
	}
	return seg[n-1], true
}

// WireSchema documents the union.
func (SecretSources) WireSchema() map[string]any {
	return map[string]any{"type": "object", "description": "Secret name to its source.",
		"additionalProperties": map[string]any{"anyOf": []any{
			map[string]any{"type": "string", "writeOnly": true, "description": "The secret's value."},
			map[string]any{"type": "object", "description": "A StaticSecret: kind (StaticSecret, optional), value, description.",
				"properties": map[string]any{"kind": map[string]any{"const": "StaticSecret"}, "value": map[string]any{"type": "string", "writeOnly": true},
					"description": map[string]any{"type": []any{"string", "null"}}},
				"required": []any{"value"}},
			map[string]any{"type": "object", "description": "A LookupSecret naming a secret of the sandbox: kind LookupSecret, url (…/api/settings/secrets/{name}), headers and description (not kept).",
				"properties": map[string]any{"kind": map[string]any{"const": "LookupSecret"}, "url": map[string]any{"type": "string"},
					"headers": map[string]any{"type": "object"}, "description": map[string]any{"type": []any{"string", "null"}}},
				"required": []any{"url"}},
		}}}
}
