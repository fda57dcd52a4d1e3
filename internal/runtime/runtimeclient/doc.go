// Package runtimeclient is the control plane's side of `agentd runtime` (package runtime, the
// server inside every sandbox): the client that reaches a runtime, and the wire types, routes,
// headers and limits both sides share. It imports nothing of the server, so that the control
// plane's packages, which reach runtimes only through it, link neither the server nor its
// terminal and pty code.
package runtimeclient
