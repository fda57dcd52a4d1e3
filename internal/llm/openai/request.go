package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/agentd/agentd/internal/llm"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// params builds the SDK request. Errors are *llm.Error of KindBadRequest: nothing was sent.
func (c *client) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	p, raw, err := c.encode(req)
	for _, m := range raw.messages {
		p.Messages = append(p.Messages, param.Override[sdk.ChatCompletionMessageParamUnion](m.json))
	}
	return p, err
}

// body is the request's JSON: the SDK's, but with the messages and tools written as the JSON
// they encode to (kept from earlier requests) rather than passed through the SDK's encoder,
// which checks and compacts each message's JSON once for the message and once more for the
// request (two passes over the whole conversation, most of a step's work in the control
// plane). The other fields are the SDK's own encoding. The body is not copied into one
// buffer: it is read from the pieces it is made of, most of them the message cache's JSON,
// so that a request waiting for the model holds little more than the cache already does.
func (c *client) body(req llm.Request) (*requestBody, error) {
	p, raw, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	tail, err := c.fields.tail(p)
	if err != nil {
		return nil, err
	}
	b := &requestBody{raw: raw, tail: tail}
	for k := 0; ; k++ {
		piece, ok := b.piece(k)
		if !ok {
			break
		}
		b.size += int64(len(piece))
	}
	return b, nil
}

// fieldsCache keeps the JSON of the fields of a client's last request other than its
// messages and tools: the SDK's encoding of them, through reflection, is the same for every
// step of a conversation (the model, the cap on tokens, the temperature).
type fieldsCache struct {
	mu   sync.Mutex
	key  fieldsKey
	json []byte
}

// fieldsKey is what encode sets of a request besides its messages and tools.
type fieldsKey struct {
	model                          string
	maxTokens, maxCompletionTokens param.Opt[int64]
	temperature                    param.Opt[float64]
}

// tail returns the JSON of p's fields but its messages and tools, each after a comma, in the
// order of their names, and the object's closing brace. It must not be changed.
func (f *fieldsCache) tail(p sdk.ChatCompletionNewParams) ([]byte, error) {
	key := fieldsKey{model: string(p.Model), maxTokens: p.MaxTokens, maxCompletionTokens: p.MaxCompletionTokens, temperature: p.Temperature}
	f.mu.Lock()
	kept, ok := f.json, f.json != nil && f.key == key
	f.mu.Unlock()
	if ok {
		return kept, nil
	}
	rest := p
	rest.Messages, rest.Tools = nil, nil
	head, err := rest.MarshalJSON()
	if err != nil {
		return nil, badRequest("%v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(head, &fields); err != nil {
		return nil, badRequest("%v", err)
	}
	delete(fields, "messages")
	delete(fields, "tools")
	var tail []byte
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, badRequest("%v", err)
		}
		tail = append(tail, ',')
		tail = append(tail, name...)
		tail = append(tail, ':')
		tail = append(tail, fields[k]...)
	}
	tail = append(tail, '}')
	f.mu.Lock()
	f.key, f.json = key, tail
	f.mu.Unlock()
	return tail, nil
}

// requestBody is a request's JSON: its messages' and tools' JSON as the caches keep them, in
// arrays, then its other fields (tail), read piece by piece (piece) without a copy of them.
type requestBody struct {
	raw  encoded
	tail []byte
	size int64
}

// Pieces of the body between the messages' and the tools' JSON.
var (
	messagesOpen = []byte(`{"messages":[`)
	toolsOpen    = []byte(`,"tools":[`)
	closeArray   = []byte{']'}
	comma        = []byte{','}
)

// piece returns the body's piece k, counting from 0, and false past the last: the opening
// up to the messages' array, the messages with commas between them, the array's end, the
// tools likewise if there are any, and the tail.
func (b *requestBody) piece(k int) ([]byte, bool) {
	if k == 0 {
		return messagesOpen, true
	}
	p, k, ok := arrayPiece(k-1, len(b.raw.messages), func(i int) []byte { return b.raw.messages[i].json })
	if ok {
		return p, true
	}
	if k == 0 {
		return closeArray, true
	}
	if k--; len(b.raw.tools) > 0 {
		if k == 0 {
			return toolsOpen, true
		}
		if p, k, ok = arrayPiece(k-1, len(b.raw.tools), func(i int) []byte { return b.raw.tools[i] }); ok {
			return p, true
		}
		if k == 0 {
			return closeArray, true
		}
		k--
	}
	if k == 0 {
		return b.tail, true
	}
	return nil, false
}

// arrayPiece returns piece k of n items (item(i) the JSON of the i-th) with commas between
// them; past them, false and k less their count.
func arrayPiece(k, n int, item func(int) []byte) ([]byte, int, bool) {
	if k < 2*n-1 {
		if k%2 == 1 {
			return comma, 0, true
		}
		return item(k / 2), 0, true
	}
	return nil, k - max(2*n-1, 0), false
}

// reader returns a reader of the whole body, from its start.
func (b *requestBody) reader() io.ReadCloser { return io.NopCloser(&bodyReader{b: b}) }

// bodyReader reads a requestBody.
type bodyReader struct {
	b *requestBody
	// next is the index of the next piece, rest what is left to read of the current one.
	next int
	rest []byte
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.rest) == 0 {
			piece, ok := r.b.piece(r.next)
			if !ok {
				if n == 0 {
					return 0, io.EOF
				}
				break
			}
			r.next++
			r.rest = piece
			continue
		}
		c := copy(p[n:], r.rest)
		n += c
		r.rest = r.rest[c:]
	}
	return n, nil
}

// sized is the middleware that gives the HTTP request the body's length, which the SDK
// knows only of a body in one buffer: without it the request would go out chunked, which
// not every compatible server takes.
func (b *requestBody) sized(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	r.ContentLength = b.size
	r.GetBody = func() (io.ReadCloser, error) { return b.reader(), nil }
	return next(r)
}

// encoded are the JSON of a request's messages and tools, in order.
type encoded struct {
	messages []encodedMessage
	tools    []json.RawMessage
}

// encode builds the SDK request but for its messages, and the JSON of its messages and
// tools, the tools also in the request. fieldsKey names every other field it sets.
func (c *client) encode(req llm.Request) (sdk.ChatCompletionNewParams, encoded, error) {
	var raw encoded
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(c.cfg.Model)}
	if req.Model != "" {
		p.Model = shared.ChatModel(req.Model)
	}
	var err error
	if raw.messages, err = c.encoded.encode(req); err != nil {
		return p, raw, err
	}
	for _, t := range req.Tools {
		tool, body, err := tools.convert(t)
		if err != nil {
			return p, raw, err
		}
		p.Tools = append(p.Tools, tool)
		raw.tools = append(raw.tools, body)
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
	return p, raw, nil
}

func badRequest(format string, args ...any) *llm.Error {
	return &llm.Error{Kind: llm.KindBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// walk calls visit for each message of the request's conversation as chat completions
// takes it, in order; convert turns one into the SDK's form, which a message the caller sent
// before need not be. from is the index of the message in req.Messages, or fromSystem for
// req.System, or fromImages for a message of the images of tool results (m empty, images
// set): chat completions has no images in tool messages, so the images of a run of tool
// results follow it in one user message (a user message between two tool results would break
// the pairing of tool calls and results).
func walk(req llm.Request, visit func(from int, m llm.Message, images []sdk.ChatCompletionContentPartUnionParam) error) error {
	if req.System != "" {
		m := llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{llm.TextPart(req.System)}}
		if err := visit(fromSystem, m, nil); err != nil {
			return err
		}
	}
	var toolImages []sdk.ChatCompletionContentPartUnionParam
	flushToolImages := func() error {
		if len(toolImages) == 0 {
			return nil
		}
		images := toolImages
		toolImages = nil
		return visit(fromImages, llm.Message{}, images)
	}
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool {
			if err := flushToolImages(); err != nil {
				return err
			}
		}
		switch m.Role {
		case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return badRequest("message %d: tool result without a tool call id", i)
			}
			for _, p := range m.Parts {
				if p.Type == llm.PartImage {
					img, err := imagePart(p.ImageURL)
					if err != nil {
						return fmt.Errorf("message %d: %w", i, err)
					}
					toolImages = append(toolImages, img)
				}
			}
		default:
			return badRequest("message %d: unknown role %q", i, m.Role)
		}
		if err := visit(i, m, nil); err != nil {
			return err
		}
	}
	return flushToolImages()
}

// convert returns a message walk visited in the SDK's form.
func convert(from int, m llm.Message, images []sdk.ChatCompletionContentPartUnionParam) (sdk.ChatCompletionMessageParamUnion, error) {
	if from == fromImages {
		parts := append([]sdk.ChatCompletionContentPartUnionParam{
			sdk.TextContentPart("Images from the tool results above:"),
		}, images...)
		return sdk.UserMessage(parts), nil
	}
	switch m.Role {
	case llm.RoleSystem:
		return sdk.SystemMessage(m.Text()), nil
	case llm.RoleUser:
		msg, err := userMessage(m)
		if err != nil {
			return msg, fmt.Errorf("message %d: %w", from, err)
		}
		return msg, nil
	case llm.RoleAssistant:
		return assistantMessage(m), nil
	default: // llm.RoleTool: walk checked the roles
		return sdk.ToolMessage(m.Text(), m.ToolCallID), nil
	}
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

// messageCache keeps the JSON of the messages of a client's last request. An agent sends
// its conversation again with every step, a message or two longer: the SDK encodes each
// message through layers of reflection, which cost more than the rest of the step's work in
// the control plane, so a message sent before goes out as the JSON it encoded to then (the
// SDK's own override with raw JSON). It holds one request's messages, never more: those of
// the previous request that the next one does not send again are forgotten.
//
// The messages are kept in the order they were sent, and each message of a request is
// looked for first at its own place: a step sends what the last one sent and appends to it,
// so it compares each message with the one kept at its place (equal strings that are the
// same memory compare at once) and encodes only the new ones, which go on the end of the
// same array. Only when a message is not the one at its place (a condensation dropped some
// before it, the system prompt changed) are the kept messages looked up by content.
type messageCache struct {
	mu   sync.Mutex
	last []encodedMessage
	// handed is how much of last's array the bodies built so far read: they may still be
	// read (a request retried, another caller's request under way), so the cache writes in
	// place only past it, and otherwise in an array of its own.
	handed int
}

// systemJSON holds the JSON of the system messages clients send, shared by them all:
// conversations started alike send the same system message, several kilobytes, and each
// client's messageCache would otherwise keep its own copy for as long as its loop runs. It
// holds each only while some client's cache does (a weak pointer), so it keeps nothing of
// conversations that ended.
var systemJSON = sharedMessages{byText: map[string]weak.Pointer[sharedJSON]{}}

// sharedJSON is the JSON of one message; caches hold it by pointer.
type sharedJSON struct{ json json.RawMessage }

// sharedMessages maps the text of single-part text messages to their JSON.
type sharedMessages struct {
	mu     sync.Mutex
	byText map[string]weak.Pointer[sharedJSON]
}

// get returns the shared JSON of m, or nil.
func (s *sharedMessages) get(m llm.Message) *sharedJSON {
	text, ok := soleText(m)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byText[text].Value()
}

// put shares enc as the JSON of m, and returns what is shared.
func (s *sharedMessages) put(m llm.Message, enc json.RawMessage) *sharedJSON {
	sh := &sharedJSON{json: enc}
	text, ok := soleText(m)
	if !ok {
		return sh
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if held := s.byText[text].Value(); held != nil {
		return held
	}
	s.byText[text] = weak.Make(sh)
	runtime.AddCleanup(sh, s.forget, text)
	return sh
}

// forget drops the entry of text once its JSON is no longer held.
func (s *sharedMessages) forget(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byText[text].Value() == nil {
		delete(s.byText, text)
	}
}

// soleText is the text of a message that is one text part and nothing else.
func soleText(m llm.Message) (string, bool) {
	if len(m.Parts) != 1 || m.Parts[0].Type != llm.PartText || len(m.ToolCalls) > 0 || m.ToolCallID != "" || m.Name != "" {
		return "", false
	}
	return m.Parts[0].Text, true
}

// messageSeed seeds the hashes of every client's messageCache.
var messageSeed = maphash.MakeSeed()

// Where a converted message comes from, besides req.Messages (see walk).
const (
	fromSystem = -1
	fromImages = -2
)

type encodedMessage struct {
	msg  llm.Message
	json json.RawMessage
	// shared, for a system message, keeps its JSON shared (systemJSON) while this holds it.
	shared *sharedJSON
	// images: the message of the images of tool results (walk), encoded anew every time,
	// with msg empty.
	images bool
}

// encode returns the JSON of the messages of req, from the cache for those sent before:
// only the others are converted and encoded. What it returns is never changed afterwards.
func (c *messageCache) encode(req llm.Request) ([]encodedMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.last
	// out shares last's array for as long as it is last's beginning (own is false).
	out, own := last[:0], false
	place := func(e encodedMessage, at int) {
		j := len(out)
		if !own && at == j {
			out = out[:j+1]
			return
		}
		if !own && j < c.handed {
			out = append(make([]encodedMessage, 0, len(req.Messages)+1), out...)
			own = true
		}
		out = append(out, e)
	}
	var byContent map[uint64][]int // of last's messages, made when one is first missed
	find := func(m llm.Message) int {
		j := len(out)
		if j < len(last) && !last[j].images && equalMessages(last[j].msg, m) {
			return j
		}
		if j >= len(last) {
			return -1 // a new message, on the end
		}
		if byContent == nil {
			byContent = make(map[uint64][]int, len(last))
			for i, e := range last {
				if !e.images {
					h := hashMessage(messageSeed, e.msg)
					byContent[h] = append(byContent[h], i)
				}
			}
		}
		for _, i := range byContent[hashMessage(messageSeed, m)] {
			if equalMessages(last[i].msg, m) {
				return i
			}
		}
		return -1
	}
	err := walk(req, func(from int, m llm.Message, images []sdk.ChatCompletionContentPartUnionParam) error {
		marshal := func() (json.RawMessage, error) {
			msg, err := convert(from, m, images)
			if err != nil {
				return nil, err
			}
			b, err := msg.MarshalJSON()
			if err != nil {
				return nil, badRequest("message %d: %v", len(out), err)
			}
			return b, nil
		}
		if from == fromImages {
			b, err := marshal()
			if err != nil {
				return err
			}
			at := -1
			if j := len(out); j < len(last) && last[j].images && bytes.Equal(last[j].json, b) {
				at = j
			}
			place(encodedMessage{json: b, images: true}, at)
			return nil
		}
		if i := find(m); i >= 0 {
			place(last[i], i)
			return nil
		}
		e := encodedMessage{msg: m}
		if m.Role == llm.RoleSystem {
			if e.shared = systemJSON.get(m); e.shared != nil {
				e.json = e.shared.json
			}
		}
		if e.json == nil {
			b, err := marshal()
			if err != nil {
				return err
			}
			e.json = b
			if m.Role == llm.RoleSystem {
				e.shared = systemJSON.put(m, b)
				e.json = e.shared.json
			}
		}
		place(e, -1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.last = out
	if own {
		c.handed = len(out)
	} else {
		c.handed = max(c.handed, len(out))
	}
	return out[:len(out):len(out)], nil
}

func hashMessage(seed maphash.Seed, m llm.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	str := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	str(string(m.Role))
	str(m.ToolCallID)
	str(m.Name)
	for _, p := range m.Parts {
		str(p.Type)
		str(p.Text)
		str(p.ImageURL)
	}
	h.WriteByte(1)
	for _, tc := range m.ToolCalls {
		str(tc.ID)
		str(tc.Name)
		str(tc.Arguments)
	}
	return h.Sum64()
}

func equalMessages(a, b llm.Message) bool {
	return a.Role == b.Role && a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.Equal(a.Parts, b.Parts) && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// toolCache keeps the encoded tools of the specs clients were given, as every agent sends
// the same tools with every request of its conversation: one cache for the process, so that
// the conversations running at once share one copy. It holds at most maxCachedTools specs
// and maxCachedToolBytes of their descriptions and schemas (which users' MCP servers write),
// and forgets them all when it would hold more (a server whose conversations bring ever new
// MCP tools).
type toolCache struct {
	mu    sync.Mutex
	tools map[toolKey]cachedTool
	bytes int
}

type cachedTool struct {
	param sdk.ChatCompletionToolUnionParam
	json  json.RawMessage
}

type toolKey struct{ name, description, parameters string }

const (
	maxCachedTools     = 512
	maxCachedToolBytes = 16 << 20
)

// tools are the tools converted so far; the SDK only reads them.
var tools toolCache

func (c *toolCache) convert(t llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, json.RawMessage, error) {
	k := toolKey{t.Name, t.Description, string(t.Parameters)}
	c.mu.Lock()
	ct, ok := c.tools[k]
	c.mu.Unlock()
	if ok {
		return ct.param, ct.json, nil
	}
	tool, err := functionTool(t)
	if err != nil {
		return tool, nil, err
	}
	// Kept as the JSON it encodes to (also as the SDK's own override with raw JSON), so that
	// it is encoded once, not with every request.
	body, err := tool.MarshalJSON()
	if err != nil {
		return tool, nil, badRequest("tool %q: %v", t.Name, err)
	}
	ct = cachedTool{param: param.Override[sdk.ChatCompletionToolUnionParam](json.RawMessage(body)), json: body}
	size := len(k.name) + len(k.description) + len(k.parameters) + len(body)
	c.mu.Lock()
	if _, ok := c.tools[k]; !ok {
		if c.tools == nil || len(c.tools) >= maxCachedTools || c.bytes+size > maxCachedToolBytes {
			c.tools, c.bytes = map[toolKey]cachedTool{}, 0
		}
		c.bytes += size
	}
	c.tools[k] = ct
	c.mu.Unlock()
	return ct.param, ct.json, nil
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
