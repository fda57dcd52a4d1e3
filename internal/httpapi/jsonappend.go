package httpapi

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/apitypes"
)

// Hand-written JSON for the items of the longest listings, byte for byte what appendJSON writes
// for the same values (a test holds them to it): encoding/json finds each field of a struct
// through reflection, which for a page of 100 start tasks cost more than reading them.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string as encoding/json writes it without HTML
// escaping: quotes, backslashes and control characters escaped, invalid UTF-8 as U+FFFD, and
// U+2028 and U+2029 escaped.
func appendJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			buf.WriteString(s[start:i])
			switch b {
			case '"', '\\':
				buf.WriteByte('\\')
				buf.WriteByte(b)
			case '\b':
				buf.WriteString(`\b`)
			case '\f':
				buf.WriteString(`\f`)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				buf.WriteString(`\u00`)
				buf.WriteByte(hexDigits[b>>4])
				buf.WriteByte(hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(s[start:i])
			buf.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf.WriteString(s[start:i])
			buf.WriteString(`\u202`)
			buf.WriteByte(hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}

// appendJSONField appends ,"name": then the string s points to, or null.
func appendJSONField(buf *bytes.Buffer, name string, s *string) {
	buf.WriteString(`,"`)
	buf.WriteString(name)
	buf.WriteString(`":`)
	if s == nil {
		buf.WriteString("null")
		return
	}
	appendJSONString(buf, *s)
}

// appendJSONTime appends ,"name": and t as time.Time's MarshalJSON writes it (RFC 3339 with
// nanoseconds). The store refuses times that do not encode.
func appendJSONTime(buf *bytes.Buffer, name string, t time.Time) {
	buf.WriteString(`,"`)
	buf.WriteString(name)
	buf.WriteString(`":"`)
	buf.Write(t.AppendFormat(buf.AvailableBuffer(), time.RFC3339Nano))
	buf.WriteByte('"')
}

// appendSandbox appends info as encoding/json writes an apitypes.SandboxInfo.
func appendSandbox(buf *bytes.Buffer, info apitypes.SandboxInfo) {
	buf.WriteString(`{"id":`)
	appendJSONString(buf, info.ID)
	appendJSONField(buf, "created_by_user_id", info.CreatedByUserID)
	buf.WriteString(`,"sandbox_spec_id":`)
	appendJSONString(buf, info.SandboxSpecID)
	buf.WriteString(`,"status":`)
	appendJSONString(buf, string(info.Status))
	appendJSONField(buf, "session_api_key", info.SessionAPIKey)
	buf.WriteString(`,"exposed_urls":`)
	appendJSONArray(buf, info.ExposedURLs, func(buf *bytes.Buffer, u apitypes.ExposedURL) {
		buf.WriteString(`{"name":`)
		appendJSONString(buf, u.Name)
		buf.WriteString(`,"url":`)
		appendJSONString(buf, u.URL)
		buf.WriteString(`,"port":`)
		appendJSONInt(buf, u.Port)
		buf.WriteByte('}')
	})
	appendJSONTime(buf, "created_at", info.CreatedAt)
	buf.WriteString(`,"backend":`)
	appendJSONString(buf, info.Backend)
	appendJSONField(buf, "detail", info.Detail)
	buf.WriteByte('}')
}

// appendAppConversation appends c as encoding/json writes an apitypes.AppConversation, with
// metrics, the encoding of c.Metrics, written as it is.
func appendAppConversation(buf *bytes.Buffer, c apitypes.AppConversation, metrics []byte) {
	buf.WriteString(`{"id":`)
	appendJSONString(buf, c.ID)
	appendJSONField(buf, "created_by_user_id", c.CreatedByUserID)
	buf.WriteString(`,"sandbox_id":`)
	appendJSONString(buf, c.SandboxID)
	appendJSONField(buf, "selected_repository", c.SelectedRepository)
	appendJSONField(buf, "selected_branch", c.SelectedBranch)
	appendJSONField(buf, "git_provider", (*string)(c.GitProvider))
	appendJSONField(buf, "title", c.Title)
	appendJSONField(buf, "trigger", (*string)(c.Trigger))
	buf.WriteString(`,"pr_number":`)
	appendJSONArray(buf, c.PRNumber, appendJSONInt)
	appendJSONField(buf, "llm_model", c.LLMModel)
	buf.WriteString(`,"metrics":`)
	buf.Write(metrics)
	appendJSONField(buf, "parent_conversation_id", c.ParentConversationID)
	buf.WriteString(`,"sub_conversation_ids":`)
	appendJSONArray(buf, c.SubConversationIDs, appendJSONString)
	appendJSONTime(buf, "created_at", c.CreatedAt)
	appendJSONTime(buf, "updated_at", c.UpdatedAt)
	buf.WriteString(`,"sandbox_status":`)
	appendJSONString(buf, string(c.SandboxStatus))
	appendJSONField(buf, "execution_status", (*string)(c.ExecutionStatus))
	appendJSONField(buf, "conversation_url", c.ConversationURL)
	appendJSONField(buf, "session_api_key", c.SessionAPIKey)
	buf.WriteString(`,"agent_kind":`)
	appendJSONString(buf, c.AgentKind)
	buf.WriteString(`,"public":`)
	switch {
	case c.Public == nil:
		buf.WriteString("null")
	case *c.Public:
		buf.WriteString("true")
	default:
		buf.WriteString("false")
	}
	buf.WriteString(`,"tags":`)
	switch {
	case c.Tags == nil:
		buf.WriteString("null")
	case len(c.Tags) == 0: // most conversations: no keys to sort
		buf.WriteString("{}")
	default:
		// encoding/json writes a map's keys in order.
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(c.Tags)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSONString(buf, k)
			buf.WriteByte(':')
			appendJSONString(buf, c.Tags[k])
		}
		buf.WriteByte('}')
	}
	buf.WriteString(`,"conversation_status":`)
	appendJSONString(buf, string(c.ConversationStatus))
	buf.WriteString(`,"conversation_version":`)
	appendJSONString(buf, c.ConversationVersion)
	appendJSONField(buf, "waiting_for_node", c.WaitingForNode)
	buf.WriteByte('}')
}

// appendJSONArray appends xs as a JSON array, each element by each, or null when xs is nil.
func appendJSONArray[T any](buf *bytes.Buffer, xs []T, each func(*bytes.Buffer, T)) {
	if xs == nil {
		buf.WriteString("null")
		return
	}
	buf.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			buf.WriteByte(',')
		}
		each(buf, x)
	}
	buf.WriteByte(']')
}

// appendJSONInt appends n in decimal.
func appendJSONInt(buf *bytes.Buffer, n int) {
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(n), 10))
}
