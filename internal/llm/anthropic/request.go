package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/anthropics/anthropic-sdk-go"
)

// params builds the SDK request. Errors are *llm.Error of KindBadRequest: nothing was sent.
func (c *client) params(req llm.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(c.cfg.Model),
		MaxTokens: DefaultMaxTokens,
		System:    system(req),
	}
	if req.Model != "" {
		p.Model = sdk.Model(req.Model)
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.Temperature != nil {
		p.Temperature = sdk.Float(*req.Temperature)
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	return p, nil
}

func badRequest(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// system gathers Request.System and every system message, in order, into the top-level
// system prompt: the messages API has no system role.
func system(req llm.Request) []sdk.TextBlockParam {
	var blocks []sdk.TextBlockParam
	if req.System != "" {
		blocks = append(blocks, sdk.TextBlockParam{Text: req.System})
	}
	for _, m := range req.Messages {
		if t := m.Text(); m.Role == llm.RoleSystem && t != "" {
			blocks = append(blocks, sdk.TextBlockParam{Text: t})
		}
	}
	return blocks
}

// messages converts the conversation. Tool results travel as tool_result blocks in a user
// message, and consecutive messages of one role are merged into one, because the API wants
// user and assistant to alternate. Empty text is dropped: the API rejects empty text blocks.
func messages(in []llm.Message) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	for i, m := range in {
		var role sdk.MessageParamRole
		var blocks []sdk.ContentBlockParamUnion
		var err error
		switch m.Role {
		case llm.RoleSystem:
			continue
		case llm.RoleUser:
			role = sdk.MessageParamRoleUser
			blocks, err = contentBlocks(m.Parts)
		case llm.RoleAssistant:
			role = sdk.MessageParamRoleAssistant
			blocks, err = assistantBlocks(m)
		case llm.RoleTool:
			role = sdk.MessageParamRoleUser
			var b sdk.ContentBlockParamUnion
			b, err = toolResult(m)
			blocks = []sdk.ContentBlockParamUnion{b}
		default:
			err = badRequest("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	return out, nil
}

func contentBlocks(parts []llm.Part) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case llm.PartImage:
			b, err := imageBlock(p.ImageURL)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		default:
			return nil, badRequest("unknown part type %q", p.Type)
		}
	}
	return blocks, nil
}

// imageBlock sends http(s) URLs as URL sources and data URLs as base64 sources.
func imageBlock(u string) (sdk.ContentBlockParamUnion, error) {
	if mediaType, data, ok := llm.ParseDataURL(u); ok {
		return sdk.NewImageBlockBase64(mediaType, data), nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: u}), nil
	}
	return sdk.ContentBlockParamUnion{}, badRequest("image URL must be http(s) or a base64 data URL")
}

func assistantBlocks(m llm.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if t := m.Text(); t != "" {
		blocks = append(blocks, sdk.NewTextBlock(t))
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
	}
	return blocks, nil
}

// toolInput is the call's arguments as the JSON object tool_use requires. Arguments that are
// not an object (the model produced junk) are sent as {}: the tool's result, which says what
// was wrong, follows in the next message.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

func toolResult(m llm.Message) (sdk.ContentBlockParamUnion, error) {
	if m.ToolCallID == "" {
		return sdk.ContentBlockParamUnion{}, badRequest("tool result without a tool call id")
	}
	r := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: p.Text}})
			}
		case llm.PartImage:
			b, err := imageBlock(p.ImageURL)
			if err != nil {
				return sdk.ContentBlockParamUnion{}, err
			}
			r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
		default:
			return sdk.ContentBlockParamUnion{}, badRequest("unknown part type %q", p.Type)
		}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &r}, nil
}

// toolParam splits a JSON Schema object into the SDK's input schema: properties and
// required have fields of their own, every other keyword rides along as an extra field.
func toolParam(t llm.ToolSpec) (sdk.ToolUnionParam, error) {
	schema := map[string]any{}
	if len(t.Parameters) > 0 {
		schema = nil
		if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
			return sdk.ToolUnionParam{}, badRequest("tool %q: parameters are not a JSON object", t.Name)
		}
	}
	var in sdk.ToolInputSchemaParam
	in.Properties = schema["properties"]
	if in.Properties == nil {
		in.Properties = map[string]any{} // a zero schema would be left out, and it is required
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	extra := map[string]any{}
	for k, v := range schema {
		if k != "type" && k != "properties" && k != "required" {
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		in.ExtraFields = extra
	}
	tool := sdk.ToolUnionParamOfTool(in, t.Name)
	if t.Description != "" {
		tool.OfTool.Description = sdk.String(t.Description)
	}
	return tool, nil
}
