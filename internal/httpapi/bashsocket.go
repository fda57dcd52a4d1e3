package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/wire"
)

// An agent server's /sockets/bash-events streams the events of its out-of-band commands and
// starts the commands its frames ask for. agentd's sandboxes keep those events in their
// runtime, which tells no one of a new one, so agentd has no stream of them to serve: the
// socket's handshake is refused with a 404 before any upgrade, which OpenHands' clients take
// as a server without it (the web app's command runner fails its commands, capability probes
// see no 101), and whose detail names the routes that serve the same.

// agentBashSocket is the path of a sandbox's bash-event socket under the prefix.
const agentBashSocket = "/agent-server/{sandbox_id}/sockets/bash-events"

var errNoBashSocket = errStatus(http.StatusNotFound, "agentd serves no bash-event socket: run commands with "+
	"POST /api/bash/start_bash_command (or /api/bash/execute_bash_command, which answers the output) and read "+
	"their events with GET /api/bash/bash_events/search")

// bashSocketRoute answers every request for the socket, whoever sends it.
func (a *API) bashSocketRoute() http.Handler {
	return a.wrap(route{h: func(w http.ResponseWriter, r *http.Request) error { return errNoBashSocket },
		op: wire.Operation{Public: true}})
}
