package mcp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/tool"
)

// KindObservation is the kind of an MCP tool's observation, as OpenHands names it.
const KindObservation = "MCPToolObservation"

// validName reports whether s follows the LLM providers' rule for a tool's name: 1 to 64
// letters, digits, '-' or '_'. A loop rather than a regular expression: `{1,64}` compiles
// to 64 copies of the class, some 60 KiB allocated at start-up in every sandbox's runtime.
func validName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !isNameChar(rune(c)) {
			return false
		}
	}
	return true
}

// isNameChar reports whether c may be part of a tool's name.
func isNameChar(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Ref says which server's tool an agent tool is.
type Ref struct{ Server, Tool string }

// Toolset is a conversation's MCP tools as the agent is offered them: each named so that it
// collides with no other tool, within the providers' rules for names.
type Toolset struct {
	tools []tool.Tool
	refs  map[string]Ref
}

// NewToolset names the tools of st. A tool keeps its own name when that name is valid, is
// not taken (taken reports the names of the agent's other tools) and no other server has a
// tool of that name; otherwise it is <server>_<tool>, cleaned up and, if need be, shortened
// with a digest so that it stays unique.
func NewToolset(st State, taken func(string) bool) Toolset {
	count := map[string]int{}
	for _, t := range st.Tools {
		count[t.Name]++
	}
	ts := Toolset{refs: map[string]Ref{}}
	used := func(n string) bool { _, ok := ts.refs[n]; return ok || taken(n) }
	for _, t := range st.Tools {
		name := t.Name
		if count[name] > 1 || !validName(name) || used(name) {
			name = prefixed(t.Server, t.Name, used)
		}
		ts.refs[name] = Ref{Server: t.Server, Tool: t.Name}
		desc := t.Description
		if desc == "" {
			desc = fmt.Sprintf("Tool %s of the MCP server %s.", t.Name, t.Server)
		}
		ts.tools = append(ts.tools, tool.NewRaw(name, desc, tool.Sandbox, t.ReadOnly, KindObservation, t.InputSchema))
	}
	return ts
}

func prefixed(server, name string, used func(string) bool) string {
	n := strings.Map(func(c rune) rune {
		if isNameChar(c) {
			return c
		}
		return '_'
	}, server+"_"+name)
	if len(n) <= 64 && !used(n) {
		return n
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	for i := 0; ; i++ {
		digest := hex.EncodeToString(sum[:])[:8]
		if i > 0 {
			digest += fmt.Sprint(i)
		}
		cut := min(len(n), 64-len(digest)-1)
		cand := n[:cut] + "_" + digest
		if !used(cand) {
			return cand
		}
	}
}

// Tools are the agent tools, in the servers' order.
func (ts Toolset) Tools() []tool.Tool { return ts.tools }

// Lookup says which server's tool the agent tool called name is.
func (ts Toolset) Lookup(name string) (Ref, bool) {
	r, ok := ts.refs[name]
	return r, ok
}

// Observation is the OpenHands observation of an MCP tool call.
type Observation struct {
	Kind     string            `json:"kind"`
	ToolName string            `json:"tool_name"`
	Content  []ObservationPart `json:"content"`
	// Structured is the tool's structured answer, when it gave one.
	Structured json.RawMessage `json:"structured_content,omitempty"`
	IsError    bool            `json:"is_error"`
}

// ObservationPart is text, or an image as a data URL: OpenHands' TextContent and
// ImageContent.
type ObservationPart struct {
	Type      string   `json:"type"`
	Text      string   `json:"text,omitempty"`
	ImageURLs []string `json:"image_urls,omitempty"`
}

// Result makes r what the model reads and the event log keeps: a first line naming the tool,
// then each text part; images and other binary parts are named in the text, and images kept
// in the observation as data URLs (which a model that takes images is shown); a structured
// answer is added as JSON when there is no text.
func Result(name string, r CallResult) tool.Result {
	obs := Observation{Kind: KindObservation, ToolName: name, IsError: r.IsError, Content: []ObservationPart{}}
	var text strings.Builder
	fmt.Fprintf(&text, "[Tool '%s' executed.]", name)
	hasText := false
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			text.WriteString("\n" + c.Text)
			obs.Content = append(obs.Content, ObservationPart{Type: "text", Text: c.Text})
			hasText = hasText || c.Text != ""
		case "image":
			url := "data:" + c.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(c.Data)
			fmt.Fprintf(&text, "\n[image: %s, %d bytes]", c.MIMEType, len(c.Data))
			obs.Content = append(obs.Content, ObservationPart{Type: "image", ImageURLs: []string{url}})
		case "resource_link":
			fmt.Fprintf(&text, "\n[resource: %s]", c.URI)
		case "resource":
			if c.Text != "" {
				text.WriteString("\n" + c.Text)
				hasText = true
			} else {
				fmt.Fprintf(&text, "\n[resource: %s, %s, %d bytes]", c.URI, c.MIMEType, len(c.Data))
			}
		default:
			fmt.Fprintf(&text, "\n[%s: %s, %d bytes]", c.Type, c.MIMEType, len(c.Data))
		}
	}
	if len(r.Structured) > 0 {
		obs.Structured = r.Structured
		if !hasText {
			text.WriteString("\n" + string(r.Structured))
		}
	}
	return tool.NewResult(text.String(), r.IsError, obs)
}
