package mcp

import (
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Content is one part of a tool's answer.
type Content struct {
	// Type is text, image, audio, resource_link or resource.
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	// Data is an image's or audio clip's bytes, or an embedded resource's blob.
	Data []byte `json:"data,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CallResult is a tool's answer. A call that failed (the server said so, or could not be
// reached, or ran out of time) has IsError set and says why in its text, for the model.
type CallResult struct {
	Content []Content `json:"content"`
	// Structured is the tool's structured answer, when it gives one.
	Structured json.RawMessage `json:"structured_content,omitempty"`
	IsError    bool            `json:"is_error"`
}

// errorResult is the answer the model sees when a call failed.
func errorResult(tool string, err error) CallResult {
	return CallResult{IsError: true, Content: []Content{{Type: "text", Text: fmt.Sprintf("Error calling MCP tool %s: %v", tool, err)}}}
}

func convertResult(r *sdk.CallToolResult) CallResult {
	out := CallResult{IsError: r.IsError, Content: []Content{}}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Content = append(out.Content, Content{Type: "text", Text: c.Text})
		case *sdk.ImageContent:
			out.Content = append(out.Content, Content{Type: "image", MIMEType: c.MIMEType, Data: c.Data})
		case *sdk.AudioContent:
			out.Content = append(out.Content, Content{Type: "audio", MIMEType: c.MIMEType, Data: c.Data})
		case *sdk.ResourceLink:
			out.Content = append(out.Content, Content{Type: "resource_link", URI: c.URI, MIMEType: c.MIMEType, Text: c.Name})
		case *sdk.EmbeddedResource:
			if c.Resource != nil {
				out.Content = append(out.Content, Content{Type: "resource", URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text, Data: c.Resource.Blob})
			}
		}
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			out.Structured = b
		}
	}
	return out
}
