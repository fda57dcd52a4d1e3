package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Operation describes one endpoint for the OpenAPI document.
type Operation struct {
	Method, Path, Summary, Description, Tag string
	OperationID                             string         // derived from Method and Path when empty
	Query                                   any            // a zero value of the query struct type, or nil
	Body                                    any            // a zero value of the body type, or nil
	Response                                any            // zero value of the 2xx response type, or nil for no content
	ResponseType                            string         // media type of the 2xx response; default application/json
	Status                                  int            // success status, default 200
	Errors                                  map[int]string // other statuses and their meaning, e.g. 401: "Missing or wrong API key"
	Public                                  bool           // true: no security requirement
	// Keys are the kinds of key the operation takes; zero means UserKey. Ignored when Public.
	Keys KeyKinds
	// FileField, when set, makes the body a multipart/form-data upload of one file in the
	// field of that name (Body is then nil).
	FileField string
	// RawResponse, when set, is the media type of a success answer that is not JSON but a
	// file's bytes (Response is then nil).
	RawResponse string
}

// KeyKinds is a set of kinds of key a request may authenticate with.
type KeyKinds uint8

// Kinds of key.
const (
	// UserKey is a user's API key, as X-Session-API-Key or Authorization: Bearer.
	UserKey KeyKinds = 1 << iota
	// SessionKey is a sandbox's session key (session_api_key), as X-Session-API-Key; whoever
	// holds it acts as the sandbox's owner.
	SessionKey
)

// Takes reports whether an operation takes keys of kind k.
func (op Operation) Takes(k KeyKinds) bool {
	keys := op.Keys
	if keys == 0 {
		keys = UserKey
	}
	return !op.Public && keys&k != 0
}

// Info is the document's info object.
type Info struct{ Title, Version, Description string }

// Names of the fixed schemas every document carries; user types with these
// names get qualified instead.
var fixedSchemas = map[string]bool{"ValidationError": true, "HTTPValidationError": true, "ErrorDetail": true}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// OpenAPI renders an OpenAPI 3.1.0 document for ops. The output is
// deterministic byte for byte (sorted keys, two-space indent, trailing
// newline) so it can be compared against a checked-in copy.
// A 422 response with FastAPI's validation error schema is added to every
// operation that takes a body or query parameters. Each operation's security says which
// kinds of key (Keys) it takes.
func OpenAPI(info Info, ops []Operation) (out []byte, err error) {
	defer func() {
		// Malformed tags panic when a type is first inspected; here that
		// is better reported as an error from building the document.
		if r := recover(); r != nil {
			msg, ok := r.(string)
			if !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("%s", msg)
		}
	}()
	g := newSchemaGen()
	paths := map[string]map[string]any{}
	opIDs := map[string]bool{}
	for _, op := range ops {
		method := strings.ToLower(op.Method)
		if !httpMethods[method] {
			return nil, fmt.Errorf("wire: %s %s: unknown method", op.Method, op.Path)
		}
		if !strings.HasPrefix(op.Path, "/") {
			return nil, fmt.Errorf("wire: %s %s: path must start with /", op.Method, op.Path)
		}
		// A ServeMux wildcard that takes the rest of the path, {name...}, is {name} here.
		path := strings.ReplaceAll(op.Path, "...}", "}")
		if _, dup := paths[path][method]; dup {
			return nil, fmt.Errorf("wire: %s %s: defined twice", op.Method, op.Path)
		}
		o, err := g.operation(method, op)
		if err != nil {
			return nil, fmt.Errorf("wire: %s %s: %w", op.Method, op.Path, err)
		}
		id := o["operationId"].(string)
		if opIDs[id] {
			return nil, fmt.Errorf("wire: %s %s: operationId %q used twice", op.Method, op.Path, id)
		}
		opIDs[id] = true
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][method] = o
	}

	schemas := g.finish(fixedSchemas)
	for name, s := range fixedSchemaDefs() {
		schemas[name] = s
	}
	infoObj := map[string]any{"title": info.Title, "version": info.Version}
	if info.Description != "" {
		infoObj["description"] = info.Description
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    infoObj,
		"paths":   paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"APIKeyHeader": map[string]any{"type": "apiKey", "in": "header", "name": "X-Session-API-Key",
					"description": "A user's API key."},
				"BearerAuth": map[string]any{"type": "http", "scheme": "bearer", "description": "A user's API key."},
				"SessionCookie": map[string]any{"type": "apiKey", "in": "cookie", "name": "agentd_session",
					"description": "The web app's session, opened by signing in with an API key; only for requests of the same origin, and those that change something must show that they come from a page of it (see docs/api.md)."},
				"SessionKeyHeader": map[string]any{"type": "apiKey", "in": "header", "name": "X-Session-API-Key",
					"description": "A sandbox's session key (its session_api_key); whoever holds it acts as the sandbox's owner."},
			},
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // descriptions may hold <, > and &
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (g *schemaGen) operation(method string, op Operation) (map[string]any, error) {
	o := map[string]any{}
	if op.Summary != "" {
		o["summary"] = op.Summary
	}
	if op.Description != "" {
		o["description"] = op.Description
	}
	if op.Tag != "" {
		o["tags"] = []string{op.Tag}
	}
	o["operationId"] = op.OperationID
	if op.OperationID == "" {
		o["operationId"] = operationID(method, op.Path)
	}

	params, err := pathParams(op.Path)
	if err != nil {
		return nil, err
	}
	if op.Query != nil {
		t := deref(reflect.TypeOf(op.Query))
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("query must be a struct, not %s", t)
		}
		for _, f := range queryInfoOf(t).fields {
			p := map[string]any{
				"name":   f.name,
				"in":     "query",
				"schema": g.fieldSchema(f.t, f.o, "", f.def, true),
			}
			if f.o.required {
				p["required"] = true
			}
			if f.doc != "" {
				p["description"] = f.doc
			}
			params = append(params, p)
		}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	switch {
	case op.FileField != "":
		o["requestBody"] = map[string]any{
			"required": true,
			"content": map[string]any{"multipart/form-data": map[string]any{"schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{op.FileField: map[string]any{"type": "string", "format": "binary"}},
				"required":   []string{op.FileField},
			}}},
		}
	case op.Body != nil:
		o["requestBody"] = map[string]any{
			"required": true,
			"content":  jsonContent(g.schemaOf(deref(reflect.TypeOf(op.Body)))),
		}
	}

	responses := map[string]any{}
	status := op.Status
	if status == 0 {
		status = 200
	}
	ok := map[string]any{"description": "Successful Response"}
	switch {
	case op.RawResponse != "":
		ok["content"] = map[string]any{op.RawResponse: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
	case op.Response != nil:
		content := jsonContent(g.schemaOf(deref(reflect.TypeOf(op.Response))))
		if op.ResponseType != "" {
			content = map[string]any{op.ResponseType: content["application/json"]}
		}
		ok["content"] = content
	}
	responses[strconv.Itoa(status)] = ok
	for code, desc := range op.Errors {
		responses[strconv.Itoa(code)] = map[string]any{
			"description": desc,
			"content":     jsonContent(map[string]any{"$ref": "#/components/schemas/ErrorDetail"}),
		}
	}
	if op.Body != nil || op.Query != nil || op.FileField != "" {
		desc := "Validation Error"
		if d, ok := op.Errors[422]; ok {
			desc = d
		}
		responses["422"] = map[string]any{
			"description": desc,
			"content":     jsonContent(map[string]any{"$ref": "#/components/schemas/HTTPValidationError"}),
		}
	}
	o["responses"] = responses
	var security []any
	if op.Takes(UserKey) {
		security = append(security, map[string]any{"APIKeyHeader": []string{}}, map[string]any{"BearerAuth": []string{}},
			map[string]any{"SessionCookie": []string{}})
	}
	if op.Takes(SessionKey) {
		security = append(security, map[string]any{"SessionKeyHeader": []string{}})
	}
	if security != nil {
		o["security"] = security
	}
	return o, nil
}

func jsonContent(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// pathParams turns each {name} in path into a required string parameter, in
// path order.
func pathParams(path string) ([]any, error) {
	var params []any
	seen := map[string]bool{}
	rest := path
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, fmt.Errorf("unbalanced } in path")
			}
			return params, nil
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unbalanced { in path")
		}
		name := rest[open+1 : open+end]
		name = strings.TrimSuffix(name, ":path") // Starlette's catch-all converter
		name = strings.TrimSuffix(name, "...")   // the ServeMux's
		if name == "" || strings.ContainsAny(name, "{/") || seen[name] {
			return nil, fmt.Errorf("bad path parameter %q", name)
		}
		seen[name] = true
		params = append(params, map[string]any{
			"name":     name,
			"in":       "path",
			"required": true,
			"schema":   map[string]any{"type": "string"},
		})
		rest = rest[open+end+1:]
	}
}

// operationID derives a stable id like "get_api_conversations_id" so client
// generators get unique method names without every route spelling one out.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(method)
	under := true
	for _, r := range path {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			if under {
				b.WriteByte('_')
				under = false
			}
			b.WriteRune(r)
		} else {
			under = true
		}
	}
	return b.String()
}

// fixedSchemaDefs are FastAPI's error schemas plus the {"detail": "..."}
// body agentd sends for non-validation errors.
func fixedSchemaDefs() map[string]any {
	return map[string]any{
		"ValidationError": map[string]any{
			"title":    "ValidationError",
			"type":     "object",
			"required": []string{"loc", "msg", "type"},
			"properties": map[string]any{
				"loc": map[string]any{
					"title": "Location",
					"type":  "array",
					"items": map[string]any{"anyOf": []any{
						map[string]any{"type": "string"},
						map[string]any{"type": "integer"},
					}},
				},
				"msg":  map[string]any{"title": "Message", "type": "string"},
				"type": map[string]any{"title": "Error Type", "type": "string"},
			},
		},
		"HTTPValidationError": map[string]any{
			"title": "HTTPValidationError",
			"type":  "object",
			"properties": map[string]any{
				"detail": map[string]any{
					"title": "Detail",
					"type":  "array",
					"items": map[string]any{"$ref": "#/components/schemas/ValidationError"},
				},
			},
		},
		"ErrorDetail": map[string]any{
			"title":      "ErrorDetail",
			"type":       "object",
			"required":   []string{"detail"},
			"properties": map[string]any{"detail": map[string]any{"title": "Detail", "type": "string"}},
		},
	}
}
