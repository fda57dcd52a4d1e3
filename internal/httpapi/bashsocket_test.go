package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestNoBashEventSocket: the bash-event socket, where OpenHands' clients open it (the
// agent-server base's /sockets/bash-events with the session key in the query, as the SDK and
// the web app build it, and the sandbox's prefix), refuses the handshake with a 404 whose
// detail names the routes that serve the same; no upgrade happens.
func TestNoBashEventSocket(t *testing.T) {
	e := newEnv(t, withAgentServer)
	_, alice := e.newUser("alice")
	sandboxID := e.runningSandbox(alice)
	session := *e.getSandbox(alice, sandboxID).SessionAPIKey
	for _, u := range []string{
		strings.Replace(e.agentSrv.URL, "http://", "ws://", 1) + "/sockets/bash-events?session_api_key=" + session,
		strings.Replace(e.agentSrv.URL, "http://", "ws://", 1) + "/sockets/bash-events?resend_mode=all",
		strings.Replace(e.srv.URL, "http://", "ws://", 1) + "/agent-server/" + sandboxID + "/sockets/bash-events?session_api_key=" + session,
	} {
		c, resp, err := websocket.Dial(t.Context(), u, nil)
		if err == nil {
			c.CloseNow()
			t.Fatalf("%s: the socket opened", u)
		}
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %v, %+v; want a 404", u, err, resp)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "/api/bash/start_bash_command") {
			t.Fatalf("%s: the refusal says %s", u, body)
		}
	}
}
