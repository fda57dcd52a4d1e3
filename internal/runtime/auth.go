package runtime

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// authorized reports whether r carries the session key. Both sides are hashed first so the
// constant-time comparison does not leak the key's length either.
func (s *Server) authorized(r *http.Request) bool {
	key := r.Header.Get(runtimeclient.HeaderSessionKey)
	if key == "" {
		key = bearer(r.Header.Get("Authorization"))
	}
	if key == "" {
		return false
	}
	sum := sha256.Sum256([]byte(key))
	return subtle.ConstantTimeCompare(sum[:], s.keySum[:]) == 1
}

// bearer extracts the token of an "Authorization: Bearer <token>" header value.
func bearer(h string) string {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
