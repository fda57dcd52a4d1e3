package mcp_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/tool/mcp"
)

func TestToolsetNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	st := mcp.State{Tools: []mcp.ToolInfo{
		{Server: "a", Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Server: "b", Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Server: "a", Name: "terminal", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Server: "a", Name: "dotted.name", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Server: "a", Name: "unique", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		{Server: "b", Name: long, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Server: "c", Name: long, InputSchema: json.RawMessage(`{"type":"object"}`)},
	}}
	ts := mcp.NewToolset(st, func(n string) bool { return n == "terminal" })
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	names := map[string]bool{}
	for _, tl := range ts.Tools() {
		if !valid.MatchString(tl.Name) {
			t.Errorf("name %q breaks the providers' rule", tl.Name)
		}
		if names[tl.Name] {
			t.Errorf("name %q given twice", tl.Name)
		}
		names[tl.Name] = true
	}
	for name, want := range map[string]mcp.Ref{
		"a_echo": {"a", "echo"}, "b_echo": {"b", "echo"}, "a_terminal": {"a", "terminal"},
		"a_dotted_name": {"a", "dotted.name"}, "unique": {"a", "unique"},
	} {
		if got, ok := ts.Lookup(name); !ok || got != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	if len(names) != len(st.Tools) {
		t.Errorf("%d names for %d tools: %v", len(names), len(st.Tools), names)
	}
	for _, tl := range ts.Tools() {
		if tl.Name == "unique" && tl.Parameters()["properties"] == nil {
			t.Errorf("unique lost its schema: %v", tl.Parameters())
		}
	}
}

func TestResult(t *testing.T) {
	r := mcp.Result("srv_pic", mcp.CallResult{Content: []mcp.Content{
		{Type: "text", Text: "a picture"},
		{Type: "image", MIMEType: "image/png", Data: []byte("png")},
	}})
	if r.IsError || r.Text != "[Tool 'srv_pic' executed.]\na picture\n[image: image/png, 3 bytes]" {
		t.Errorf("text = %q", r.Text)
	}
	var obs mcp.Observation
	if err := json.Unmarshal(r.Observation, &obs); err != nil {
		t.Fatal(err)
	}
	if obs.Kind != mcp.KindObservation || len(obs.Content) != 2 || len(obs.Content[1].ImageURLs) != 1 || obs.Content[1].ImageURLs[0] != "data:image/png;base64,cG5n" {
		t.Errorf("observation = %s", r.Observation)
	}
	s := mcp.Result("sum", mcp.CallResult{Structured: json.RawMessage(`{"sum":5}`), IsError: true})
	if !s.IsError || !strings.Contains(s.Text, `{"sum":5}`) {
		t.Errorf("structured result = %+v", s)
	}
}

func TestServerNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"a": true, "fs-2_x": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a.b": false, "a b": false, "é": false, "a\n": false, "a/b": false,
	} {
		err := mcp.Server{Name: name, Transport: mcp.Stdio, Command: "true"}.Check()
		if (err == nil) != ok {
			t.Errorf("Check of name %q: %v; want valid %v", name, err, ok)
		}
	}
}

func TestToolsetNamesNotASCII(t *testing.T) {
	st := mcp.State{Tools: []mcp.ToolInfo{{Server: "s", Name: "héllo wörld", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	ts := mcp.NewToolset(st, func(string) bool { return false })
	if got, ok := ts.Lookup("s_h_llo_w_rld"); !ok || got != (mcp.Ref{Server: "s", Tool: "héllo wörld"}) {
		t.Errorf("tools %v: want s_h_llo_w_rld", ts.Tools()[0].Name)
	}
}
