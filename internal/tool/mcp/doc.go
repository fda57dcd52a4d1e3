// Package mcp connects an agent to MCP tool servers through the official Go SDK, as a client.
//
// A [Hub] holds the servers of one conversation. It runs inside the sandbox (in `agentd
// runtime`), so that a stdio server is a process of the sandbox, counted against its limits
// and frozen with it, and so that an SSE or streamable-HTTP server is reached through the
// sandbox's own network: a user cannot reach through agentd what their sandbox could not.
//
// Each server is connected when the hub is configured and kept: a stdio server whose process
// dies, or a remote server whose session ends, is connected again on its next use. Listing
// tools and calling one are bounded in time; a server that fails gives a [ServerStatus] that
// says why rather than an error, so that a conversation goes on without its tools. A server's
// API key is sent as a bearer token and never logged.
package mcp
