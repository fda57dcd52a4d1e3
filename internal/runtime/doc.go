// Package runtime is the tool router that runs inside every sandbox (`agentd runtime`) and the
// client agentd serve uses to reach it.
//
// The server speaks HTTP on a unix socket or a loopback port. Every route except the liveness
// probes (/alive, /health) needs the sandbox's session key, sent as X-Session-API-Key or as
// Authorization: Bearer. The runtime holds no secret but that key, and it removes the key from
// its own environment before it starts any command.
package runtime
