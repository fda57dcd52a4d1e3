package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/wire"
)

// The agent-server base: the conversation API at the root of a listener of its own, where
// OpenHands' clients look for it. The web app keeps only the scheme, host and port of a
// conversation_url and SDK clients cut it at /api/conversations/, so neither can use the
// /agent-server/{sandbox_id} prefix of the main listener. Every route of that prefix is
// served here without it; the sandbox a request is for comes from its session key, or, with
// the owner's API key, from the conversation in its path.

// errNeedsSessionKey refuses an owner's API key on a route of the base that names no
// conversation: nothing says which sandbox is meant.
var errNeedsSessionKey = errStatus(http.StatusBadRequest,
	"This route names no conversation, so it needs the sandbox's session key (X-Session-API-Key: its session_api_key) "+
		"to know the sandbox; with your API key, use the main server's /agent-server/<sandbox id> prefix")

// agentServerURL is the AGENT_SERVER exposed URL of a sandbox: the agent-server base when
// there is one, else the sandbox's prefix of the main server.
func (a *API) agentServerURL(sandboxID string) string {
	if a.d.AgentServerURL != "" {
		return a.d.AgentServerURL
	}
	return strings.TrimRight(a.d.PublicURL, "/") + agentServerPrefix + sandboxID
}

// conversationURL is where clients talk to a conversation.
func (a *API) conversationURL(sandboxID, convID string) string {
	return a.agentServerURL(sandboxID) + "/api/conversations/" + convID
}

// AgentServer serves the agent-server base (see Deps.AgentServerURL).
func (a *API) AgentServer() http.Handler { return a.agentHandler }

// agentBaseHandler builds the base's mux from the routes under the sandbox prefix.
func (a *API) agentBaseHandler(rts []route) http.Handler {
	mux := http.NewServeMux()
	const prefix = agentServerPrefix + "{sandbox_id}"
	for _, rt := range rts {
		if !strings.HasPrefix(rt.op.Path, prefix+"/") {
			continue
		}
		rt.op.Path = strings.TrimPrefix(rt.op.Path, prefix)
		mux.Handle(rt.op.Method+" "+rt.op.Path, a.inBaseSandbox(rt))
	}
	for _, rt := range a.agentBaseOnly() {
		mux.Handle(rt.op.Method+" "+rt.op.Path, a.wrap(rt))
	}
	mux.HandleFunc("GET "+strings.TrimPrefix(agentSocket, prefix), a.eventSocket)
	mux.Handle("GET "+strings.TrimPrefix(agentBashSocket, prefix), a.bashSocketRoute())
	mux.Handle("/", a.wrap(route{h: func(w http.ResponseWriter, r *http.Request) error {
		return errNotFoundRoute
	}, op: wire.Operation{Public: true}}))
	return a.requestIDs(a.recoverer(a.logRequests(a.cors(cleanPaths(mux)))))
}

// agentBaseOnly are the base's routes the prefix has no counterpart of: an agent server's
// health routes, which the main listener has of its own.
func (a *API) agentBaseOnly() []route {
	return []route{
		{wire.Operation{Method: "GET", Path: "/health", Public: true}, a.health},
		{wire.Operation{Method: "GET", Path: "/ready", Public: true}, a.readyz},
		{wire.Operation{Method: "GET", Path: "/server_info", Public: true}, a.serverInfo},
	}
}

// inBaseSandbox finds the sandbox of a request to the base, which the route's handler reads
// as the path's sandbox_id, as under the prefix.
func (a *API) inBaseSandbox(rt route) http.Handler {
	h := a.wrap(rt)
	if rt.op.Public {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.baseSandbox(r.Context(), r.Header.Get(sessionKeyHeader), userKey(r), r)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		r.SetPathValue("sandbox_id", id)
		h.ServeHTTP(w, r)
	})
}

// baseSandbox is the sandbox whose session key sessionKey is or, failing that, the sandbox
// of the conversation in r's path that belongs to the user whose key userKey is. The
// route's own authentication checks the keys again, for what the route takes.
func (a *API) baseSandbox(ctx context.Context, sessionKey, userKey string, r *http.Request) (string, error) {
	if sessionKey != "" {
		sb, err := a.d.Sandboxes.SandboxForSessionKey(ctx, sessionKey)
		if err == nil {
			return sb.ID, nil
		}
		if !errors.Is(err, sandbox.ErrSessionKey) {
			return "", err
		}
	}
	u, err := a.d.Auth.Authenticate(ctx, userKey)
	if err != nil {
		return "", err
	}
	if r.PathValue("conversation_id") == "" {
		return "", errNeedsSessionKey
	}
	convID, err := conversationIDFromPath(r)
	if err != nil {
		return "", err
	}
	v, err := a.d.Conversations.Get(ctx, u.ID, convID)
	if err != nil {
		return "", err
	}
	if v.SandboxID == "" {
		return "", conversation.ErrNotReady
	}
	return v.SandboxID, nil
}
