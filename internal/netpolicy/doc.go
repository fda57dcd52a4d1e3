// Package netpolicy is the one policy for connections the control plane makes to URLs that
// users supply: their LLM base URL now, MCP servers and webhooks later. Internal addresses
// (loopback, private, link-local, cloud metadata, carrier-grade NAT, multicast, reserved,
// and IPv6 spellings of those) are refused for users who are not administrators, unless the
// administrator's allow-list admits them.
//
// The policy is applied twice. CheckURL looks at a URL when a user submits it, so that the
// user hears at once which rule refuses it. Client returns the HTTP client that makes the
// connections; its dialer checks every address it connects to, after name resolution, so a
// DNS answer that changes after the first check, or a redirect to another host, gains
// nothing. That second check is the one that holds.
package netpolicy
