package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// P builds an expected problem.
func P(typ, msg string, loc ...any) Problem { return Problem{Type: typ, Loc: loc, Msg: msg} }

// problemsOf returns the problems of a decode error, failing on other errors.
func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *Error: %v", err, err)
	}
	return e.Problems
}

func checkProblems(t *testing.T, err error, want []Problem) {
	t.Helper()
	got := problemsOf(t, err)
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("problems\n got: %s\nwant: %s", gj, wj)
	}
}

type decodeCase struct {
	name  string
	body  string
	dst   func() any // defaults to *StartRequest
	want  []Problem
	check func(t *testing.T, dst any)
}

func runDecodeCases(t *testing.T, cases []decodeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dst any = &StartRequest{}
			if tc.dst != nil {
				dst = tc.dst()
			}
			err := DecodeJSON([]byte(tc.body), dst)
			checkProblems(t, err, tc.want)
			if tc.check != nil {
				tc.check(t, dst)
			}
		})
	}
}

func TestDecodeJSONSyntax(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "bad value", body: `{"a":}`, want: []Problem{P("json_invalid", "JSON decode error", "body", 5)}},
		{name: "missing colon", body: `{"a" 1}`, want: []Problem{P("json_invalid", "JSON decode error", "body", 5)}},
		{name: "truncated", body: `{"a":1`, want: []Problem{P("json_invalid", "JSON decode error", "body", 6)}},
		{name: "trailing data", body: `{} x`, want: []Problem{P("json_invalid", "JSON decode error", "body", 3)}},
		{name: "whitespace only", body: ` `, want: []Problem{P("json_invalid", "JSON decode error", "body", 1)}},
		{name: "empty body", body: ``, want: []Problem{P("missing", "Field required", "body")}},
		{name: "null body", body: `null`, want: []Problem{P("missing", "Field required", "body")}},
		{name: "array body", body: `[1]`, want: []Problem{P("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", "body")}},
		{name: "trailing whitespace ok", body: "{}\n\t ", want: nil},
		{name: "list body", body: `[{"user":"a","password":"b"},{"user":""}]`,
			dst: func() any { return &[]Login{} },
			want: []Problem{
				P("string_too_short", "String should have at least 1 character", "body", 1, "user"),
				P("missing", "Field required", "body", 1, "password"),
			}},
		{name: "null body into pointer", body: `null`, dst: func() any { p := new(*Login); return p }, want: nil},
	})
}

func TestDecodeJSONTypes(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "all wrong types, in field order", body: `{
			"id": 1, "version": "2", "initial_user_msg": false, "git_provider": 3,
			"selected_branch": null, "image_urls": "x", "provider_tokens": [],
			"mcp_config": "nope", "labels": 1, "created_at": 5, "max_iterations": 1.5,
			"temperature": "hot", "confirm": "true", "small": null, "count": {}, "mode": null}`,
			want: []Problem{
				P("string_type", "Input should be a valid string", "body", "id"),
				P("int_type", "Input should be a valid integer", "body", "version"),
				P("string_type", "Input should be a valid string", "body", "initial_user_msg"),
				P("enum", "Input should be 'github', 'gitlab' or 'bitbucket'", "body", "git_provider"),
				P("string_type", "Input should be a valid string", "body", "selected_branch"),
				P("list_type", "Input should be a valid list", "body", "image_urls"),
				P("dict_type", "Input should be a valid dictionary", "body", "provider_tokens"),
				P("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", "body", "mcp_config"),
				P("dict_type", "Input should be a valid dictionary", "body", "labels"),
				P("datetime_type", "Input should be a valid datetime", "body", "created_at"),
				P("int_from_float", "Input should be a valid integer, got a number with a fractional part", "body", "max_iterations"),
				P("float_type", "Input should be a valid number", "body", "temperature"),
				P("bool_type", "Input should be a valid boolean", "body", "confirm"),
				P("int_type", "Input should be a valid integer", "body", "small"),
				P("int_type", "Input should be a valid integer", "body", "count"),
				P("enum", "Input should be 'fast' or 'slow'", "body", "mode"),
			}},
		{name: "valid values", body: `{
			"id": "c1", "version": 2.0, "initial_user_msg": "hi", "git_provider": "gitlab",
			"image_urls": ["a", "b"], "provider_tokens": {"github": "tok"},
			"created_at": "2024-05-06T07:08:09.5+02:00", "max_iterations": 1e2,
			"temperature": 0.5, "confirm": true, "small": -128, "count": 18446744073709551615,
			"mode": "slow", "Untagged": "u", "Ignored": "x", "unknown": {"deep": [1]}}`,
			check: func(t *testing.T, dst any) {
				r := dst.(*StartRequest)
				when := time.Date(2024, 5, 6, 5, 8, 9, 5e8, time.UTC)
				if r.ID != "c1" || r.Version != 2 || *r.InitialUserMsg != "hi" || *r.GitProvider != "gitlab" ||
					len(r.ImageURLs) != 2 || r.ProviderTokens["github"] != "tok" || !r.CreatedAt.Equal(when) ||
					r.MaxIterations != 100 || r.Temperature != 0.5 || !r.Confirm || r.Small != -128 ||
					r.Count != 18446744073709551615 || r.Mode != "slow" || r.Untagged != "u" || r.Ignored != "" {
					t.Fatalf("decoded %+v", r)
				}
			}},
		{name: "nulls for nullable kinds", body: `{"initial_user_msg": null, "image_urls": null,
			"provider_tokens": null, "mcp_config": null, "metadata": null, "extra": null, "created_at": null}`,
			check: func(t *testing.T, dst any) {
				r := dst.(*StartRequest)
				if r.InitialUserMsg != nil || r.ImageURLs != nil || r.ProviderTokens != nil || r.MCPConfig != nil ||
					r.Metadata != nil || r.Extra != nil || r.CreatedAt != nil {
					t.Fatalf("decoded %+v", r)
				}
			}},
		{name: "null for non-nullable kinds", body: `{"id": null, "version": null, "temperature": null, "confirm": null}`,
			want: []Problem{
				P("string_type", "Input should be a valid string", "body", "id"),
				P("int_type", "Input should be a valid integer", "body", "version"),
				P("float_type", "Input should be a valid number", "body", "temperature"),
				P("bool_type", "Input should be a valid boolean", "body", "confirm"),
			}},
		{name: "null for struct", body: `{"labels": {"a": null}}`,
			want: []Problem{P("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", "body", "labels", "a")}},
		{name: "raw and any pass through", body: `{"metadata": {"b": [1, 2.50], "a": "<x>"}, "extra": {"n": 12345678901234567890}}`,
			check: func(t *testing.T, dst any) {
				r := dst.(*StartRequest)
				if string(r.Metadata) != `{"a":"<x>","b":[1,2.50]}` {
					t.Fatalf("metadata %s", r.Metadata)
				}
				if n := r.Extra.(map[string]any)["n"]; n != json.Number("12345678901234567890") {
					t.Fatalf("extra %#v", r.Extra)
				}
			}},
		{name: "defaults fill absent keys only", body: `{"max_iterations": 7}`,
			check: func(t *testing.T, dst any) {
				r := dst.(*StartRequest)
				if r.SelectedBranch != "main" || r.MaxIterations != 7 {
					t.Fatalf("decoded %+v", r)
				}
			}},
	})
}

func TestDecodeJSONBounds(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "numbers", body: `{"version": 0, "max_iterations": 501, "temperature": -0.1}`,
			want: []Problem{
				P("greater_than_equal", "Input should be greater than or equal to 1", "body", "version"),
				P("less_than_equal", "Input should be less than or equal to 500", "body", "max_iterations"),
				P("greater_than_equal", "Input should be greater than or equal to 0", "body", "temperature"),
			}},
		{name: "go type range", body: `{"small": 128, "count": -1, "version": 1e30}`,
			want: []Problem{
				P("less_than_equal", "Input should be less than or equal to 9223372036854775807", "body", "version"),
				P("less_than_equal", "Input should be less than or equal to 127", "body", "small"),
				P("greater_than_equal", "Input should be greater than or equal to 0", "body", "count"),
			}},
		{name: "string lengths count characters", body: `{"repository": "ééééééééééééééééééééé", "title": "é", "nick": "ab"}`,
			want: []Problem{
				P("string_too_long", "String should have at most 20 characters", "body", "repository"),
				P("string_too_short", "String should have at least 2 characters", "body", "title"),
				P("string_too_long", "String should have at most 1 character", "body", "nick"),
			}},
		{name: "string length ok", body: `{"repository": "éééééééééééééééééééé", "title": "ab", "nick": "é"}`},
		{name: "list too long", body: `{"image_urls": ["a", "b", "c", "d"]}`,
			want: []Problem{P("too_long", "List should have at most 3 items after validation, not 4", "body", "image_urls")}},
		{name: "list too short", body: `{"xs": []}`,
			dst: func() any {
				return &struct {
					Xs []int `json:"xs" wire:"minlen=1"`
				}{}
			},
			want: []Problem{P("too_short", "List should have at least 1 item after validation, not 0", "body", "xs")}},
		{name: "dict too long", body: `{"m": {"a": 1, "b": 2}}`,
			dst: func() any {
				return &struct {
					M map[string]int `json:"m" wire:"maxlen=1"`
				}{}
			},
			want: []Problem{P("too_long", "Dictionary should have at most 1 item after validation, not 2", "body", "m")}},
		{name: "pointer bounds apply to the value", body: `{"n": 11}`,
			dst: func() any {
				return &struct {
					N *float32 `json:"n" wire:"max=10.5"`
				}{}
			},
			want: []Problem{P("less_than_equal", "Input should be less than or equal to 10.5", "body", "n")}},
	})
}

func TestDecodeJSONNested(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "struct in list in struct", body: `{"mcp_config": {"sse_servers": [{"url": ""}, {"api_key": "k"}]}}`,
			want: []Problem{
				P("string_too_short", "String should have at least 1 character", "body", "mcp_config", "sse_servers", 0, "url"),
				P("missing", "Field required", "body", "mcp_config", "sse_servers", 1, "url"),
			}},
		{name: "strict nested struct", body: `{"mcp_config": {"zeta": 1, "sse_servers": ["http://a"], "alpha": 2}, "other": 3}`,
			want: []Problem{
				P("extra_forbidden", "Extra inputs are not permitted", "body", "mcp_config", "alpha"),
				P("extra_forbidden", "Extra inputs are not permitted", "body", "mcp_config", "zeta"),
			}},
		{name: "strict top level", body: `{"user": "u", "password": "p", "otp": "1"}`,
			dst:  func() any { return &Login{} },
			want: []Problem{P("extra_forbidden", "Extra inputs are not permitted", "body", "otp")}},
		{name: "union string or object", body: `{"mcp_config": {"sse_servers": ["http://a", {"url": "http://b", "api_key": "k"}], "shell": {"command": "sh"}}}`,
			check: func(t *testing.T, dst any) {
				c := dst.(*StartRequest).MCPConfig
				want := []MCPServer{{URL: "http://a"}, {URL: "http://b", APIKey: "k"}}
				if !reflect.DeepEqual(c.SSEServers, want) || c.Shell.Command != "sh" {
					t.Fatalf("decoded %+v", c)
				}
			}},
		{name: "union wrong shapes", body: `{"mcp_config": {"sse_servers": [7, {"url": 1}], "shell": {}}}`,
			want: []Problem{
				P("model_attributes_type", "Input should be a valid dictionary or object to extract fields from", "body", "mcp_config", "sse_servers", 0),
				P("string_type", "Input should be a valid string", "body", "mcp_config", "sse_servers", 1, "url"),
				P("missing", "Field required", "body", "mcp_config", "shell", "command"),
			}},
		{name: "validator on list item", body: `{"mcp_config": {"stdio_servers": [{"name": "ok", "command": "x"}, {"name": "a b", "command": "y"}]}}`,
			want: []Problem{
				P("value_error", "Value error, name must not contain spaces", "body", "mcp_config", "stdio_servers", 1, "name"),
			}},
		{name: "validators bottom-up, skipped above failures", body: `{"mcp_config": {}, "labels": {"x": {"name": "a b"}, "y": {"name": "c d", "command": "z"}}}`,
			want: []Problem{
				P("value_error", "Value error, at least one server is required", "body", "mcp_config"),
				P("missing", "Field required", "body", "labels", "x", "command"),
				P("value_error", "Value error, name must not contain spaces", "body", "labels", "y", "name"),
			}},
		{name: "list length after items", body: `{"mcp_config": {"stdio_servers": [{}, {"name": "a", "command": "b"}, {"name": "c", "command": "d"}]}}`,
			want: []Problem{
				P("missing", "Field required", "body", "mcp_config", "stdio_servers", 0, "name"),
				P("missing", "Field required", "body", "mcp_config", "stdio_servers", 0, "command"),
				P("too_long", "List should have at most 2 items after validation, not 3", "body", "mcp_config", "stdio_servers"),
			}},
		{name: "enum map key", body: `{"provider_tokens": {"svn": "a", "github": 1, "gitlab": "ok"}}`,
			want: []Problem{
				P("string_type", "Input should be a valid string", "body", "provider_tokens", "github"),
				P("enum", "Input should be 'github', 'gitlab' or 'bitbucket'", "body", "provider_tokens", "svn", "[key]"),
			}},
		{name: "int map key", body: `{"m": {"1": true, "x": true, "300": false}}`,
			dst: func() any {
				return &struct {
					M map[uint8]bool `json:"m"`
				}{}
			},
			want: []Problem{
				P("less_than_equal", "Input should be less than or equal to 255", "body", "m", "300", "[key]"),
				P("int_parsing", "Input should be a valid integer, unable to parse string as an integer", "body", "m", "x", "[key]"),
			}},
		{name: "embedded fields are promoted", body: `{"id": "x", "version": 3, "Base": {}}`,
			check: func(t *testing.T, dst any) {
				if b := dst.(*StartRequest).Base; b.ID != "x" || b.Version != 3 {
					t.Fatalf("decoded %+v", b)
				}
			}},
	})
}

type Inner struct {
	A string `json:"a"`
}

type Shadow struct {
	*Inner
	A      int    `json:"a"`
	hidden string // stays as it was
	B      string `json:"b"`
}

func TestDecodeJSONStructRules(t *testing.T) {
	s := Shadow{hidden: "keep"}
	checkProblems(t, DecodeJSON([]byte(`{"a": 5, "b": "x", "hidden": "no"}`), &s), nil)
	if s.A != 5 || s.Inner != nil || s.hidden != "keep" || s.B != "x" {
		t.Fatalf("decoded %+v", s)
	}

	type Promoted struct {
		*Inner
		C int `json:"c"`
	}
	var p Promoted
	checkProblems(t, DecodeJSON([]byte(`{"a": "s"}`), &p), nil)
	if p.Inner == nil || p.A != "s" {
		t.Fatalf("embedded pointer not allocated: %+v", p)
	}
}

func TestErrorString(t *testing.T) {
	err := DecodeJSON([]byte(`{"user": "", "token": "secret-value"}`), &Login{})
	got := err.Error()
	want := "wire: 3 validation errors: body.user: String should have at least 1 character [string_too_short]; " +
		"body.password: Field required [missing]; body.token: Extra inputs are not permitted [extra_forbidden]"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(got, "secret-value") {
		t.Fatal("input echoed")
	}
	one := (&Error{Problems: []Problem{P("missing", "Field required", "query", "q")}}).Error()
	if one != "wire: 1 validation error: query.q: Field required [missing]" {
		t.Fatal(one)
	}
}

func TestDecodeJSONBadDst(t *testing.T) {
	var l Login
	if err := DecodeJSON([]byte(`{}`), l); err == nil || errors.As(err, new(*Error)) {
		t.Fatalf("want a plain error, got %v", err)
	}
}

func TestBadTagsPanic(t *testing.T) {
	for name, dst := range map[string]any{
		"unknown option": &struct {
			A int `json:"a" wire:"requird"`
		}{},
		"bad min": &struct {
			A int `json:"a" wire:"min=x"`
		}{},
		"bad default": &struct {
			A int `json:"a" wire:"default=ten"`
		}{},
		"default on list": &struct {
			A []int `json:"a" wire:"default=1"`
		}{},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				}
			}()
			_ = DecodeJSON([]byte(`{}`), dst)
		})
	}
}

func TestCheckerStandalone(t *testing.T) {
	c := NewChecker("path")
	if c.Err() != nil {
		t.Fatal("empty checker has an error")
	}
	c.At("conversation_id").ValueError("not a hex id")
	c.Add("missing", "Field required", "x")
	checkProblems(t, c.Err(), []Problem{
		P("value_error", "Value error, not a hex id", "path", "conversation_id"),
		P("missing", "Field required", "path", "x"),
	})
}
