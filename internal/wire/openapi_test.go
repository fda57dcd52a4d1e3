package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/wire/testdata/otherpkg"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

type ConversationInfo struct {
	ConversationID string     `json:"conversation_id" wire:"required"`
	Title          string     `json:"title" wire:"required" doc:"Human-readable title"`
	Status         Mode       `json:"status" wire:"required"`
	CreatedAt      time.Time  `json:"created_at" wire:"required"`
	LastUpdatedAt  *time.Time `json:"last_updated_at"`
	Trigger        *Provider  `json:"trigger"`
	Tags           []string   `json:"tags" wire:"nullable"`
	Score          uint32     `json:"score"`
}

type Page[T any] struct {
	Results    []T     `json:"results" wire:"required"`
	NextPageID *string `json:"next_page_id"`
}

// Config collides with otherpkg.Config.
type Config struct {
	Theme string          `json:"theme" wire:"default=dark"`
	Other otherpkg.Config `json:"other"`
	Tree  Node            `json:"tree"`
	Err   ValidationError `json:"err"`
}

// Node is recursive.
type Node struct {
	Name     string             `json:"name"`
	Children []Node             `json:"children"`
	Parent   *Node              `json:"parent"`
	Counts   [2]int             `json:"counts"`
	Weights  map[string]float64 `json:"weights" wire:"minlen=1"`
	Blob     []byte             `json:"blob"`
}

// ValidationError collides with FastAPI's fixed schema name.
type ValidationError struct {
	Field string `json:"field"`
}

type Token struct {
	Token string `json:"token" wire:"required,secret"`
}

func sampleOps() []Operation {
	return []Operation{
		{Method: "GET", Path: "/api/conversations", Summary: "List conversations", Tag: "conversations",
			Query: ListQuery{}, Response: Page[ConversationInfo]{}, Errors: map[int]string{401: "Missing or wrong API key"}},
		{Method: "POST", Path: "/api/conversations", Summary: "Start a conversation", Tag: "conversations",
			Description: "Starts a conversation & its runtime <async>.",
			Body:        StartRequest{}, Response: ConversationInfo{}, Status: 201,
			Errors: map[int]string{401: "Missing or wrong API key", 422: "Invalid request"}},
		{Method: "GET", Path: "/api/conversations/{conversation_id}", Tag: "conversations",
			Response: &ConversationInfo{}, Errors: map[int]string{404: "No such conversation"}},
		{Method: "DELETE", Path: "/api/conversations/{conversation_id}", Tag: "conversations", Status: 204,
			OperationID: "delete_conversation"},
		{Method: "POST", Path: "/api/login", Public: true, Body: Login{}, Response: Token{}},
		{Method: "GET", Path: "/api/config", Response: Config{}},
		{Method: "GET", Path: "/api/sandbox/config", Keys: SessionKey, Response: Config{}},
		{Method: "GET", Path: "/api/sandbox/either", Keys: UserKey | SessionKey, Response: Config{}},
		{Method: "PUT", Path: "/api/servers/{kind}/{name}", Body: []StdioServer{}, Response: map[string]MCPServer{}},
		{Method: "GET", Path: "/api/range", Query: &RangeQuery{}, Response: []int{}},
		{Method: "POST", Path: "/api/upload", FileField: "file", Response: Token{}},
		{Method: "GET", Path: "/api/files/{path...}", RawResponse: "application/octet-stream"},
	}
}

func TestOpenAPIGolden(t *testing.T) {
	info := Info{Title: "agentd", Version: "0.1.0", Description: "OpenHands-compatible agent server"}
	got, err := OpenAPI(info, sampleOps())
	if err != nil {
		t.Fatal(err)
	}
	again, err := OpenAPI(info, sampleOps())
	if err != nil || !bytes.Equal(got, again) {
		t.Fatal("output is not deterministic")
	}
	const golden = "testdata/openapi_golden.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/wire -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("OpenAPI output differs from %s; run go test ./internal/wire -update and review the diff", golden)
	}
	checkRefs(t, got)
}

// checkRefs verifies that every $ref points at a component in the document.
func checkRefs(t *testing.T, doc []byte) {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	schemas := d["components"].(map[string]any)["schemas"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if _, ok := schemas[name]; !ok {
					t.Errorf("dangling $ref %s", ref)
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(d)
}

func TestOpenAPIErrors(t *testing.T) {
	cases := map[string][]Operation{
		"unknown method":   {{Method: "FETCH", Path: "/x"}},
		"relative path":    {{Method: "GET", Path: "x"}},
		"duplicate":        {{Method: "GET", Path: "/x"}, {Method: "get", Path: "/x"}},
		"duplicate id":     {{Method: "GET", Path: "/x", OperationID: "a"}, {Method: "GET", Path: "/y", OperationID: "a"}},
		"bad param":        {{Method: "GET", Path: "/x/{}"}},
		"unbalanced":       {{Method: "GET", Path: "/x/{id"}},
		"query not struct": {{Method: "GET", Path: "/x", Query: 5}},
		"bad tag": {{Method: "POST", Path: "/x", Body: struct {
			A int `json:"a" wire:"mni=1"`
		}{}}},
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := OpenAPI(Info{}, ops); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"Config": "Config",
		"Page[github.com/agentd/agentd/internal/wire.ConversationInfo]": "Page_ConversationInfo",
		"Pair[string,*example.com/x.Y]":                                 "Pair_string_Y",
		"Odd[map[string]int]":                                           "Odd_map_stringint",
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNullable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{}`},
		{`{"type":"string"}`, `{"type":["string","null"]}`},
		{`{"type":"null"}`, `{"type":"null"}`},
		{`{"type":["string","integer"]}`, `{"type":["string","integer","null"]}`},
		{`{"type":["string","null"]}`, `{"type":["string","null"]}`},
		{`{"type":"string","enum":["a"]}`, `{"anyOf":[{"enum":["a"],"type":"string"},{"type":"null"}]}`},
		{`{"$ref":"#/x"}`, `{"anyOf":[{"$ref":"#/x"},{"type":"null"}]}`},
	} {
		var in map[string]any
		if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(nullable(in))
		if string(got) != tc.want {
			t.Errorf("nullable(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
