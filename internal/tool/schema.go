package tool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// mustSchema derives the LLM-facing JSON Schema of an argument struct from wire's schema
// generator, so that the schema and the decoder read the same tags. wire describes types for
// an OpenAPI document: named types become components reached by $ref, optional pointers are
// nullable and every component has a title. LLM APIs want one self-contained object schema, so
// the refs are inlined, titles dropped and "null" taken out of the types (a missing argument is
// how the model says "none").
func mustSchema(name string, args any) []byte {
	doc, err := wire.OpenAPI(wire.Info{Title: "tool", Version: "0"}, []wire.Operation{
		{Method: "POST", Path: "/" + name, Body: args, Public: true},
	})
	if err != nil {
		panic(fmt.Sprintf("tool %s: schema: %v", name, err))
	}
	var d struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		panic(fmt.Sprintf("tool %s: schema: %v", name, err))
	}
	root := d.Paths["/"+name]["post"].RequestBody.Content["application/json"].Schema
	s := inline(root, d.Components.Schemas, 0)
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: schema: %v", name, err))
	}
	return b
}

// inline replaces component refs with the components themselves (keeping sibling keys such as
// a field's description), drops titles and removes null from type lists.
func inline(v any, comps map[string]any, depth int) any {
	if depth > 32 {
		panic("tool: schema: recursive argument types are not supported")
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		if ref, ok := x["$ref"].(string); ok {
			target, ok := comps[strings.TrimPrefix(ref, "#/components/schemas/")]
			if !ok {
				panic("tool: schema: dangling ref " + ref)
			}
			for k, v := range inline(target, comps, depth+1).(map[string]any) {
				out[k] = v
			}
		}
		for k, v := range x {
			switch k {
			case "$ref", "title":
				continue
			case "type":
				out[k] = withoutNull(v)
			case "properties":
				// Keys here are argument names, not keywords: "title" may be one.
				props := map[string]any{}
				for name, ps := range v.(map[string]any) {
					props[name] = inline(ps, comps, depth+1)
				}
				out[k] = props
			default:
				out[k] = inline(v, comps, depth+1)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = inline(e, comps, depth+1)
		}
		return out
	}
	return v
}

func withoutNull(t any) any {
	list, ok := t.([]any)
	if !ok {
		return t
	}
	var kept []any
	for _, e := range list {
		if e != "null" {
			kept = append(kept, e)
		}
	}
	if len(kept) == 1 {
		return kept[0]
	}
	return kept
}
