package runtime

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// A pooled runtime (agentd runtime --pooled) is started ahead of need, in a sandbox no user
// has claimed yet: its namespaces, network, limits and this process are up, but it holds no
// session key. The key it was started with is the pool's secret, known only to the control
// plane, and it serves nothing but the liveness probes and one delivery: POST /api/deliver,
// carrying that secret, with the session key and the environment of the start that claimed
// the sandbox. From the answer to that request on, it is the server a runtime started with
// that key and environment would be, and the secret is no use any more.

// maxDeliverBytes bounds the body of a delivery: a key and an environment.
const maxDeliverBytes = 1 << 20

// pooledHandler serves a pooled runtime until its delivery, then the Server the delivery armed.
type pooledHandler struct {
	// next is the server the delivery arms with its session key and environment (Server.arm)
	// and hands the requests to. It is built with the runtime, not by the delivery, which is
	// on a claim's path: built there, in a process that has served nothing yet, it took about
	// 0.5 ms of the 1 to 1.4 ms the delivery took in a sandbox. No request reaches it before.
	next *Server
	// baseEnv is the environment the delivery's is laid over.
	baseEnv []string

	server atomic.Pointer[Server]

	mu        sync.Mutex // held by a delivery, so that two at once make one server
	secretSum [sha256.Size]byte
	closed    bool
}

// newPooledHandler serves next once a delivery authenticated by secret armed it; next is built
// with the environment deliveries are laid over, and with secret as its key until then.
func newPooledHandler(secret string, next *Server) *pooledHandler {
	return &pooledHandler{next: next, baseEnv: next.cfg.Env, secretSum: sha256.Sum256([]byte(secret))}
}

func (p *pooledHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s := p.server.Load(); s != nil {
		s.ServeHTTP(w, r)
		return
	}
	switch r.URL.Path {
	case "/alive":
		only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		}).ServeHTTP(w, r)
	case "/health":
		only(http.MethodGet, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "OK") }).ServeHTTP(w, r)
	case runtimeclient.PathDeliver:
		only(http.MethodPost, p.deliver).ServeHTTP(w, r)
	default:
		// Nothing else is served before the delivery: there is no session key to check.
		writeDetail(w, http.StatusUnauthorized, "Unauthorized")
	}
}

// deliver takes the one delivery.
func (p *pooledHandler) deliver(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(runtimeclient.HeaderSessionKey)
	sum := sha256.Sum256([]byte(key))
	p.mu.Lock()
	defer p.mu.Unlock()
	if key == "" || subtle.ConstantTimeCompare(sum[:], p.secretSum[:]) != 1 || p.server.Load() != nil || p.closed {
		writeDetail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDeliverBytes))
	if err != nil {
		writeDetail(w, http.StatusBadRequest, "Could not read the request body")
		return
	}
	var req runtimeclient.DeliverRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeDetail(w, http.StatusBadRequest, "The body is not a delivery")
		return
	}
	env, err := deliveredEnv(p.baseEnv, req)
	if err != nil {
		writeDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	s := p.next
	s.arm(req.SessionKey, env)
	// The secret is spent: no second delivery can match it.
	p.secretSum = [sha256.Size]byte{}
	p.server.Store(s)
	s.handleIdentity(w, r)
}

// deliveredEnv checks a delivery and lays its environment over base.
func deliveredEnv(base []string, req runtimeclient.DeliverRequest) ([]string, error) {
	if strings.TrimSpace(req.SessionKey) == "" {
		return nil, errors.New("the delivery has no session key")
	}
	env := slices.Clone(base)
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		v := req.Env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, errors.New("the delivery's environment has a variable that cannot be set")
		}
		if k == runtimeclient.KeyEnv {
			continue // the key never reaches a command
		}
		env = append(withoutVar(env, k), k+"="+v)
	}
	return env, nil
}

// Close closes the server, delivered or not, and refuses a delivery from then on.
func (p *pooledHandler) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.next.Close()
}
