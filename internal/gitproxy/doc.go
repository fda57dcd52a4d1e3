// Package gitproxy is agentd's side of the git path of sandboxes: git inside a sandbox never
// holds a provider token, because agentd adds it on the way upstream.
//
// Git in the sandbox speaks smart HTTP to the runtime's git relay, a loopback port of the
// sandbox (see package runtime). The sandbox has no route to agentd, so agentd opens the
// channel: it asks the runtime, over the runtime's own endpoint, to upgrade the connection,
// and then serves HTTP/2 on it while the runtime, as the client, sends git's requests. For
// each request the proxy checks that the path names a repository of a conversation in that
// sandbox (/<provider>/<owner>/<name>.git/...), resolves the repository's upstream and
// credentials (Remotes), and forwards the request to the provider with the Authorization
// header added, streaming bodies both ways. The token appears in no URL, file, environment,
// event or log of the sandbox, and in no answer: an answer that fails upstream is passed on
// with the token masked.
//
// Service keeps one channel per sandbox that needs one, opening it again whenever it drops
// (the runtime or agentd restarted), for as long as the sandbox exists.
package gitproxy
