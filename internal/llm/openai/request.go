package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// params builds the SDK request. Errors are *llm.Error of KindBadRequest: nothing was sent.
func (c *client) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	if req.Model != "" {
		p.Model = shared.ChatModel(req.Model)
	}
	msgs, err := messages(req)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		tool, err := c.tools.convert(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if req.MaxTokens > 0 {
		if c.completionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		p.Temperature = sdk.Float(*req.Temperature)
	}
	return p, nil
}

func badRequest(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// messages converts the conversation. Chat completions has no images in tool messages, so
// the images of a run of tool results follow it in one user message: a user message between
// two tool results would break the pairing of tool calls and results.
func messages(req llm.Request) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, sdk.SystemMessage(req.System))
	}
	var toolImages []sdk.ChatCompletionContentPartUnionParam
	flushToolImages := func() {
		if len(toolImages) > 0 {
			parts := append([]sdk.ChatCompletionContentPartUnionParam{
				sdk.TextContentPart("Images from the tool results above:"),
			}, toolImages...)
			out = append(out, sdk.UserMessage(parts))
			toolImages = nil
		}
	}
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool {
			flushToolImages()
		}
		switch m.Role {
		case llm.RoleSystem:
			out = append(out, sdk.SystemMessage(m.Text()))
		case llm.RoleUser:
			msg, err := userMessage(m)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			out = append(out, msg)
		case llm.RoleAssistant:
			out = append(out, assistantMessage(m))
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, badRequest("message %d: tool result without a tool call id", i)
			}
			out = append(out, sdk.ToolMessage(m.Text(), m.ToolCallID))
			for _, p := range m.Parts {
				if p.Type == llm.PartImage {
					img, err := imagePart(p.ImageURL)
					if err != nil {
						return nil, fmt.Errorf("message %d: %w", i, err)
					}
					toolImages = append(toolImages, img)
				}
			}
		default:
			return nil, badRequest("message %d: unknown role %q", i, m.Role)
		}
	}
	flushToolImages()
	return out, nil
}

func userMessage(m llm.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	var parts []sdk.ChatCompletionContentPartUnionParam
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			parts = append(parts, sdk.TextContentPart(p.Text))
		case llm.PartImage:
			img, err := imagePart(p.ImageURL)
			if err != nil {
				return sdk.ChatCompletionMessageParamUnion{}, err
			}
			parts = append(parts, img)
		default:
			return sdk.ChatCompletionMessageParamUnion{}, badRequest("unknown part type %q", p.Type)
		}
	}
	var msg sdk.ChatCompletionMessageParamUnion
	switch {
	case len(parts) == 0:
		msg = sdk.UserMessage("")
	case len(parts) == 1 && m.Parts[0].Type == llm.PartText:
		// A plain string suits every compatible server, some of which reject part lists.
		msg = sdk.UserMessage(m.Parts[0].Text)
	default:
		msg = sdk.UserMessage(parts)
	}
	if m.Name != "" {
		msg.OfUser.Name = sdk.String(m.Name)
	}
	return msg, nil
}

func assistantMessage(m llm.Message) sdk.ChatCompletionMessageParamUnion {
	var a sdk.ChatCompletionAssistantMessageParam
	if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = sdk.String(text)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: tc.Arguments,
				},
			},
		})
	}
	if m.Name != "" {
		a.Name = sdk.String(m.Name)
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// imagePart accepts http(s) URLs and base64 data URLs, which chat completions takes as they are.
func imagePart(u string) (sdk.ChatCompletionContentPartUnionParam, error) {
	_, _, isData := llm.ParseDataURL(u)
	if !isData && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return sdk.ChatCompletionContentPartUnionParam{}, badRequest("image URL must be http(s) or a base64 data URL")
	}
	return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}), nil
}

// toolCache keeps the converted tools of the specs a client was given, as an agent sends
// the same tools with every request of its conversation. It holds at most maxCachedTools
// specs, and forgets them all when it would hold more (a server whose conversations bring
// ever new MCP tools).
type toolCache struct {
	mu    sync.Mutex
	tools map[toolKey]sdk.ChatCompletionToolUnionParam
}

type toolKey struct{ name, description, parameters string }

const maxCachedTools = 512

func (c *toolCache) convert(t llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	k := toolKey{t.Name, t.Description, string(t.Parameters)}
	c.mu.Lock()
	tool, ok := c.tools[k]
	c.mu.Unlock()
	if ok {
		return tool, nil
	}
	tool, err := functionTool(t)
	if err != nil {
		return tool, err
	}
	c.mu.Lock()
	if c.tools == nil || len(c.tools) >= maxCachedTools {
		c.tools = map[toolKey]sdk.ChatCompletionToolUnionParam{}
	}
	c.tools[k] = tool
	c.mu.Unlock()
	return tool, nil
}

// functionTool converts a tool's spec. The schema's top-level keywords keep their values
// as the raw JSON they are (the SDK writes a json.RawMessage as it is, compacted): decoding
// the whole schema into maps for the SDK to encode again cost more than the rest of a
// request, every step, for the same few schemas.
func functionTool(t llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if len(t.Parameters) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &raw); err != nil || raw == nil {
			return sdk.ChatCompletionToolUnionParam{}, badRequest("tool %q: parameters are not a JSON object", t.Name)
		}
		params = make(shared.FunctionParameters, len(raw))
		for k, v := range raw {
			params[k] = v
		}
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
	if t.Description != "" {
		def.Description = sdk.String(t.Description)
	}
	return sdk.ChatCompletionFunctionTool(def), nil
}
