package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// schemaGen turns Go types into JSON Schema (the OpenAPI 3.1 dialect).
// Named structs and enums become components referenced by $ref, which keeps
// the document small and lets recursive types terminate. Component names are
// only chosen at the end, once every type is known, so that two types with
// the same Go name both get qualified, whichever was met first.
type schemaGen struct {
	comps map[reflect.Type]*component
	order []reflect.Type // first-seen order, the deterministic tie-break
}

type component struct {
	name   string
	schema map[string]any
}

func newSchemaGen() *schemaGen {
	return &schemaGen{comps: map[reflect.Type]*component{}}
}

// refTo is a $ref whose target name is looked up when the document is
// marshalled, after finish has named the components.
type refTo struct {
	g *schemaGen
	t reflect.Type
}

func (r refTo) MarshalJSON() ([]byte, error) {
	c := r.g.comps[r.t]
	if c == nil || c.name == "" {
		return nil, fmt.Errorf("wire: no component for %s", r.t)
	}
	return json.Marshal("#/components/schemas/" + c.name)
}

// typeRef is what Ref puts in a user-supplied schema; the generator swaps it
// for the schema of the type.
type typeRef struct{ t reflect.Type }

func (r typeRef) MarshalJSON() ([]byte, error) {
	return nil, fmt.Errorf("wire: Ref(%s) used outside a WireSchema method", r.t)
}

// Ref returns a schema that stands for the schema of v's type, for use in a
// WireSchema method: a $ref to its component for named structs and enums,
// its inline schema otherwise. Example:
//
//	func (MCPServer) WireSchema() map[string]any {
//		return map[string]any{"anyOf": []any{
//			map[string]any{"type": "string"},
//			wire.Ref(mcpServerObject{}),
//		}}
//	}
func Ref(v any) map[string]any {
	return map[string]any{"$ref": typeRef{t: reflect.TypeOf(v)}}
}

// schemaOf returns a fresh schema map for t that callers may decorate.
func (g *schemaGen) schemaOf(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return nullable(g.schemaOf(t.Elem()))
	}
	if t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(schemerType) {
		user := reflect.New(t).Interface().(Schemer).WireSchema()
		return g.resolve(user).(map[string]any)
	}
	ti := infoOf(t)
	switch ti.kind {
	case kindString, kindTextUnmarshaler:
		return map[string]any{"type": "string"}
	case kindEnum, kindStruct:
		if t.Name() == "" {
			return g.structSchema(t)
		}
		return g.component(t)
	case kindBool:
		return map[string]any{"type": "boolean"}
	case kindInt:
		return map[string]any{"type": "integer"}
	case kindUint:
		return map[string]any{"type": "integer", "minimum": 0}
	case kindFloat, kindNumber:
		return map[string]any{"type": "number"}
	case kindTime:
		return map[string]any{"type": "string", "format": "date-time"}
	case kindRaw, kindAny, kindJSONUnmarshaler:
		return map[string]any{}
	case kindBytes:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case kindSlice:
		return map[string]any{"type": "array", "items": g.schemaOf(t.Elem())}
	case kindArray:
		return map[string]any{"type": "array", "items": g.schemaOf(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case kindMap:
		s := map[string]any{"type": "object", "additionalProperties": g.schemaOf(t.Elem())}
		switch infoOf(t.Key()).kind {
		case kindEnum:
			s["propertyNames"] = g.schemaOf(t.Key())
		case kindInt, kindUint:
			s["propertyNames"] = map[string]any{"pattern": "^-?[0-9]+$"}
		}
		return s
	}
	panic("wire: no schema for type " + t.String())
}

// component registers a named struct or enum and returns a $ref to it. The
// type is registered before its schema is built, so self-references resolve.
func (g *schemaGen) component(t reflect.Type) map[string]any {
	if _, ok := g.comps[t]; !ok {
		c := &component{}
		g.comps[t] = c
		g.order = append(g.order, t)
		if infoOf(t).kind == kindEnum {
			c.schema = map[string]any{"type": "string", "enum": infoOf(t).enum}
		} else {
			c.schema = g.structSchema(t)
		}
		c.schema["title"] = cleanName(t.Name())
	}
	return map[string]any{"$ref": refTo{g: g, t: t}}
}

func (g *schemaGen) structSchema(t reflect.Type) map[string]any {
	ti := infoOf(t)
	props := map[string]any{}
	var required []string
	for _, f := range ti.fields {
		props[f.name] = g.fieldSchema(f.t, f.o, f.doc, f.def, false)
		if f.o.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	if ti.strict {
		s["additionalProperties"] = false
	}
	return s
}

// fieldSchema is the schema of one body field or query parameter: the type's
// schema plus what the tags say. Query parameters cannot be null, so their
// pointers only mean "optional".
func (g *schemaGen) fieldSchema(t reflect.Type, o *opts, doc string, def reflect.Value, query bool) map[string]any {
	var s map[string]any
	if query {
		s = g.schemaOf(deref(t))
	} else {
		s = g.schemaOf(t)
		if o.nullable && t.Kind() != reflect.Pointer {
			s = nullable(s)
		}
	}
	if o.min != nil {
		s["minimum"] = json.Number(o.min.jsonNum)
	}
	if o.max != nil {
		s["maximum"] = json.Number(o.max.jsonNum)
	}
	var minKey, maxKey string
	switch infoOf(deref(t)).kind {
	case kindString, kindEnum:
		minKey, maxKey = "minLength", "maxLength"
	case kindSlice, kindArray:
		minKey, maxKey = "minItems", "maxItems"
	case kindMap:
		minKey, maxKey = "minProperties", "maxProperties"
	}
	if minKey != "" && o.minLen >= 0 {
		s[minKey] = o.minLen
	}
	if maxKey != "" && o.maxLen >= 0 {
		s[maxKey] = o.maxLen
	}
	if o.secret {
		s["writeOnly"] = true
		if infoOf(deref(t)).kind == kindString {
			s["format"] = "password"
		}
	}
	if doc != "" {
		s["description"] = doc
	}
	if def.IsValid() {
		s["default"] = def.Interface()
	}
	return s
}

// nullable widens a schema to also accept null: by adding "null" to its
// type where that keeps the meaning, else with anyOf.
func nullable(s map[string]any) map[string]any {
	if len(s) == 0 {
		return s // {} already accepts null
	}
	_, hasEnum := s["enum"]
	simple := !hasEnum
	for _, k := range []string{"$ref", "anyOf", "oneOf", "allOf", "const"} {
		if _, ok := s[k]; ok {
			simple = false
		}
	}
	if simple {
		switch typ := s["type"].(type) {
		case string:
			if typ != "null" {
				s["type"] = []any{typ, "null"}
			}
			return s
		case []any:
			for _, x := range typ {
				if x == "null" {
					return s
				}
			}
			s["type"] = append(typ, "null")
			return s
		}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// resolve copies a user-supplied schema, replacing Ref placeholders with the
// schema of their type.
func (g *schemaGen) resolve(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(typeRef); ok {
			s := g.schemaOf(r.t)
			for k, v := range x {
				if k != "$ref" {
					s[k] = g.resolve(v)
				}
			}
			return s
		}
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = g.resolve(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = g.resolve(v)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = g.resolve(v)
		}
		return out
	}
	return v
}

// finish names the components and returns them keyed by name. A Go name is
// used alone when no other type (nor a fixed schema) has it; otherwise every
// type sharing it is qualified by package name, then by package path, and
// finally numbered in first-seen order.
func (g *schemaGen) finish(reserved map[string]bool) map[string]any {
	taken := map[string]bool{}
	for n := range reserved {
		taken[n] = true
	}
	pending := g.order
	for level := 0; len(pending) > 0; level++ {
		count := map[string]int{}
		names := make([]string, len(pending))
		for i, t := range pending {
			names[i] = componentName(t, level)
			count[names[i]]++
		}
		var next []reflect.Type
		for i, t := range pending {
			n := names[i]
			switch {
			case level == 3:
				for k := 2; taken[n]; k++ {
					n = fmt.Sprintf("%s%d", names[i], k)
				}
			case count[n] > 1 || taken[n]:
				next = append(next, t)
				continue
			}
			taken[n] = true
			g.comps[t].name = n
		}
		pending = next
	}
	out := make(map[string]any, len(g.comps))
	for _, c := range g.comps {
		out[c.name] = c.schema
	}
	return out
}

func componentName(t reflect.Type, level int) string {
	base := cleanName(t.Name())
	pkg := t.PkgPath()
	switch level {
	case 0:
		return base
	case 1:
		return cleanName(pkg[strings.LastIndex(pkg, "/")+1:]) + "__" + base
	default:
		return cleanName(strings.NewReplacer("/", "_", ".", "_").Replace(pkg)) + "__" + base
	}
}

// cleanName makes a Go type name usable as a component name: generic
// arguments lose their package paths and brackets, Page[x/y.Item] becoming
// Page_Item, and anything outside [A-Za-z0-9_.-] goes.
func cleanName(name string) string {
	var b strings.Builder
	tok := 0 // start of the current identifier in name
	flush := func(end int) {
		id := name[tok:end]
		id = id[strings.LastIndexAny(id, "./")+1:]
		b.WriteString(id)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '[' || c == ',':
			flush(i)
			b.WriteByte('_')
			tok = i + 1
		case c == ']' || c == ' ' || c == '*':
			flush(i)
			tok = i + 1
		case c == '.' || c == '/' || c == '_' || c == '-' ||
			c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		default:
			flush(i)
			tok = i + 1
		}
	}
	flush(len(name))
	return b.String()
}
