package runtimeclient

import (
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// WireStrict rejects fields the runtime does not know.
func (CommandRequest) WireStrict() {}

// ValidateWire rejects values no shell can take.
func (r *CommandRequest) ValidateWire(c *wire.Checker) {
	if strings.ContainsRune(r.Command, 0) {
		c.ValueError("command must not contain NUL bytes", "command")
	}
	if strings.ContainsRune(r.Cwd, 0) {
		c.ValueError("cwd must not contain NUL bytes", "cwd")
	}
	for k, v := range r.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			c.ValueError("an environment variable name must be non-empty and contain no '=' or NUL", "env", k)
		case strings.ContainsRune(v, 0):
			c.ValueError("an environment value must not contain NUL bytes", "env", k)
		}
	}
}

// WireStrict rejects fields the runtime does not know.
func (ToolRequest) WireStrict() {}

// ValidateWire rejects a conversation id that could not be a key in logs.
func (r *ToolRequest) ValidateWire(c *wire.Checker) {
	if strings.ContainsFunc(r.ConversationID, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		c.ValueError("conversation_id must not contain control characters", "conversation_id")
	}
}
