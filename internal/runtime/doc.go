// Package runtime is the tool router that runs inside every sandbox (`agentd runtime`). The
// client agentd serve uses to reach it, and the wire types both share, are in runtimeclient,
// so that the control plane does not link this server, its terminal and its pty.
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
// history, and stop its MCP servers, when the conversation is deleted), POST
// /api/tools/sessions/{conversation_id}/interrupt (stop the command of a terminal call the
// agent gave up on when it was paused, and report it), PUT and GET
// /api/mcp/{conversation_id} (give a conversation its MCP servers, and list their tools) and
// POST /api/mcp/{conversation_id}/call (call one; see mcp.go and package tool/mcp), and POST /api/skill-files (find and read, within
// bounds and confined to the workspace, the instruction files and skill files a repository
// keeps for agents), and GET /api/git/channel (agentd's channel for the sandbox's git
// requests; see gitrelay.go).
//
// The bash routes are OpenHands' agent server's, for its SDK clients: POST
// /api/bash/start_bash_command (run a command in the background), POST
// /api/bash/execute_bash_command (run one and wait for its end), GET
// /api/bash/bash_events/search and GET /api/bash/bash_events/{event_id}. Their events are kept
// in memory, bounded (see bash.go).
//
// The workspace routes read and write the workspace without the agent, for the control plane
// to relay: GET /api/file/list, /api/file/tree, /api/file/download, /api/file/serve and
// /api/file/archive, POST /api/file/upload, GET /api/git/changes and /api/git/diff. Every path
// they take is confined to the workspace, symbolic links included (see Server.resolve).
//
// The runtime keeps its key from the commands it runs by being not dumpable (protect.go). A
// backend that starts it as root names the sandbox uid with --sandbox-uid: the runtime then
// stays root, a uid the commands cannot signal or reach through /proc, and works on files and
// starts every process as the sandbox uid (sandboxuser.go).
//
// Once it has answered no request for IdleTrimAfter, `agentd runtime` unmaps the pages of its
// executable that start-up and its requests mapped, which are most of its resident memory, and
// returns the heap it grew, if it did (idle.go).
package runtime
