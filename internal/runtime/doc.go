// Package runtime is the tool router that runs inside every sandbox (`agentd runtime`) and the
// client agentd serve uses to reach it.
//
// The server speaks HTTP on a unix socket or a loopback port. Every route except the liveness
// probes (/alive, /health) needs the sandbox's session key, sent as X-Session-API-Key or as
// Authorization: Bearer. The runtime holds no secret but that key, and it removes the key from
// its own environment before it starts any command.
//
// Routes: GET /alive and /health (probes), GET /api/identity, POST /api/command (one command,
// out of band, not seen by the agent), POST /api/command/stream (the same, with the output
// sent as it comes), POST /api/tools/{name} (a sandbox tool call for a
// conversation: terminal, file_editor, glob, grep; see package tool), and
// DELETE /api/tools/sessions/{conversation_id} (end a conversation's terminal and edit
// history, when the conversation is deleted), and GET /api/git/channel (agentd's channel for
// the sandbox's git requests; see gitrelay.go).
package runtime
