package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/secret"
)

// The agent server's bash routes: commands a client runs in a sandbox out of band of its
// conversations. The sandbox runtime runs them and keeps their events; agentd relays the
// requests and masks, in what comes back, the custom secrets the sandbox's conversations
// were given, as their events are masked.

// maxBashAnswerBytes bounds a runtime's answer to a bash route, read whole to be masked: a
// page of 100 events whose output the runtime bounds (64 KiB per stream), JSON-escaped.
const maxBashAnswerBytes = 64 << 20

// agentServerBash relays a bash route whose path is the runtime's.
func (a *API) agentServerBash(route string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		return a.relayBash(w, r, route)
	}
}

// agentServerBashEvent relays GET /api/bash/bash_events/{event_id}.
func (a *API) agentServerBashEvent(w http.ResponseWriter, r *http.Request) error {
	return a.relayBash(w, r, runtimeclient.RouteBashEvents+url.PathEscape(r.PathValue("event_id")))
}

func (a *API) relayBash(w http.ResponseWriter, r *http.Request, route string) error {
	sandboxID := r.PathValue("sandbox_id")
	resp, err := a.workspaceAnswer(r, sandboxID, route, r.URL.Query())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return runtimeRefusal(resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBashAnswerBytes+1))
	switch {
	case err != nil:
		return fmt.Errorf("read the bash answer of sandbox %s: %w", sandboxID, err)
	case len(body) > maxBashAnswerBytes:
		return fmt.Errorf("the bash answer of sandbox %s is over %d bytes", sandboxID, maxBashAnswerBytes)
	}
	secrets, err := a.d.Conversations.SandboxSecrets(r.Context(), caller(r).ID, sandboxID)
	if err != nil {
		return err
	}
	values := make([]string, len(secrets))
	for i, s := range secrets {
		values[i] = s.Value
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(secret.NewRedactor(values...).RedactJSON(body))
	return nil
}
