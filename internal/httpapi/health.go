package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/wire"
)

// Check is one dependency the readiness probes check: the store, the sandbox backend.
type Check struct {
	// Name is the key of the check in the answer, e.g. "store".
	Name string
	// Run returns nil when the dependency works. An error with a ClientMessage is shown as
	// that; any other error is shown as "<Name> failed", its text going to the log only.
	Run func(ctx context.Context) error
}

// Bounds of the readiness checks. Probes are public, so one result serves every probe of
// the next readinessTTL instead of each probe reaching the store and the backend.
const (
	checkTimeout = 3 * time.Second
	readinessTTL = time.Second
)

// readiness runs the checks and caches their result.
type readiness struct {
	checks []Check
	now    func() time.Time

	mu     sync.Mutex
	at     time.Time
	result apitypes.ReadinessResponse
	// failing remembers which checks failed last, so a failure is logged once when it
	// begins and once when it ends, not at every probe.
	failing map[string]bool
}

func (a *API) alive(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, apitypes.AliveResponse{Status: "ok"})
	return nil
}

// health answers "OK" as OpenHands' server does when everything works, and 503 with what
// does not otherwise.
func (a *API) health(w http.ResponseWriter, r *http.Request) error {
	res := a.ready.get(r.Context(), a)
	if res.Status != statusReady {
		writeJSON(w, http.StatusServiceUnavailable, res)
		return nil
	}
	writeJSON(w, http.StatusOK, "OK")
	return nil
}

// readyz answers the result of every check: 200 when all work, else 503.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) error {
	res := a.ready.get(r.Context(), a)
	status := http.StatusOK
	if res.Status != statusReady {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, res)
	return nil
}

const (
	statusReady       = "ready"
	statusUnavailable = "unavailable"
)

// get returns the cached result, or runs the checks when it is older than readinessTTL.
// Concurrent probes wait for one run.
func (rd *readiness) get(ctx context.Context, a *API) apitypes.ReadinessResponse {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if !rd.at.IsZero() && rd.now().Sub(rd.at) < readinessTTL {
		return rd.result
	}
	rd.result = rd.run(context.WithoutCancel(ctx), a)
	rd.at = rd.now()
	return rd.result
}

// run runs every check at once, each within checkTimeout.
func (rd *readiness) run(ctx context.Context, a *API) apitypes.ReadinessResponse {
	errs := make([]error, len(rd.checks))
	var wg sync.WaitGroup
	for i, c := range rd.checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			defer cancel()
			errs[i] = c.Run(cctx)
			if errs[i] != nil && cctx.Err() != nil {
				errs[i] = fmt.Errorf("%w: did not answer within %v", errs[i], checkTimeout)
			}
		})
	}
	wg.Wait()
	res := apitypes.ReadinessResponse{Status: statusReady, Checks: map[string]string{}}
	var problems []string
	for i, c := range rd.checks {
		if errs[i] == nil {
			res.Checks[c.Name] = "ok"
			if rd.failing[c.Name] {
				a.log.Info("readiness check passes again", "check", c.Name)
				delete(rd.failing, c.Name)
			}
			continue
		}
		msg := checkMessage(c.Name, errs[i])
		res.Checks[c.Name] = msg
		problems = append(problems, msg)
		if !rd.failing[c.Name] {
			a.log.Error("readiness check failed", "check", c.Name, "err", errs[i])
			rd.failing[c.Name] = true
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		res.Status, res.Message = statusUnavailable, strings.Join(problems, "; ")
	}
	return res
}

// checkMessage words a failed check for the answer: the error's client message, or a
// generic one, so that no internal error text reaches an unauthenticated caller.
func checkMessage(name string, err error) string {
	var cm interface{ ClientMessage() string }
	if errors.As(err, &cm) {
		return cm.ClientMessage()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("%s did not answer within %v", name, checkTimeout)
	}
	return name + " failed; the server log has the cause"
}

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) error {
	doc, err := a.openapi()
	if err != nil {
		return fmt.Errorf("build openapi document: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
	return nil
}

// APIVersion is the version of the HTTP interface described by the OpenAPI document.
const APIVersion = "1.0.0"

// OpenAPI returns the OpenAPI document of the API, generated from the route table and the
// wire types. docs/openapi.json is a checked-in copy; a test fails when they drift.
func OpenAPI() ([]byte, error) {
	var a API
	rts := a.routes()
	ops := make([]wire.Operation, len(rts))
	for i, rt := range rts {
		ops[i] = rt.op
	}
	return wire.OpenAPI(wire.Info{
		Title:       "agentd",
		Version:     APIVersion,
		Description: "Runs software-agent conversations inside sandboxes. Compatible with the OpenHands server API (V1 under /api/v1, legacy V0 under /api).",
	}, ops)
}
