package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime"
	"github.com/agentd/agentd/internal/sandbox"
)

// Options tells Run what the backend under test is and which isolation it promises.
type Options struct {
	// Spec is the spec sandboxes start from. It must run the agentd runtime (RuntimeSpec).
	Spec sandbox.Spec
	// Unsupported lists changes to Spec that the backend must refuse with sandbox.ErrUnsupported,
	// leaving nothing behind.
	Unsupported []SpecChange
	// Leftovers, if set, reports in the backend's own terms what is left on the machine of a
	// destroyed sandbox (processes, cgroups, containers); nil or empty means nothing.
	Leftovers func(inst sandbox.Instance) []string

	// Isolation the backend promises. The process backend promises none.

	// IsolatesFilesystem: a command can neither read nor write a host file outside its
	// workspace.
	IsolatesFilesystem bool
	// IsolatesSandboxes: a command sees neither the processes nor the files of another
	// sandbox.
	IsolatesSandboxes bool
	// IsolatesNetwork: with Network "none", a command cannot reach a loopback port on the
	// host.
	IsolatesNetwork bool
	// LimitsMemory: with Limits.MemoryBytes set, a command that allocates without bound is
	// killed inside its sandbox, while the sandbox's runtime, other sandboxes and the host
	// carry on.
	LimitsMemory bool
	// LimitsPIDs: with Limits.PIDs set, a fork bomb is held below that many processes, and
	// destroying its sandbox ends it.
	LimitsPIDs bool
}

// SpecChange is a named change to a spec.
type SpecChange struct {
	Name  string
	Apply func(*sandbox.Spec)
}

// Run runs the conformance suite against the backends newBackend returns.
//
// newBackend is called once per subtest, and twice in the adoption test: every value it
// returns must see the same machine state (same root directory, same daemon), the way a new
// agentd process sees the sandboxes of the one before it. It should register the backend's
// Close with t.Cleanup.
func Run(t *testing.T, newBackend func(t *testing.T) sandbox.Backend, opts Options) {
	s := &suite{newBackend: newBackend, opts: opts}
	t.Run("StartAndAuth", s.testStartAndAuth)
	t.Run("Commands", s.testCommands)
	t.Run("Files", s.testFiles)
	t.Run("PauseResume", s.testPauseResume)
	t.Run("Adoption", s.testAdoption)
	t.Run("Destroy", s.testDestroy)
	t.Run("DestroyPaused", s.testDestroyPaused)
	t.Run("List", s.testList)
	t.Run("Unsupported", s.testUnsupported)
	t.Run("Isolation", s.testIsolation)
}

type suite struct {
	newBackend func(t *testing.T) sandbox.Backend
	opts       Options
}

// Bounds of the suite's waits. They are deadlines of loops that stop as soon as the awaited
// thing happens, not sleeps.
const (
	readyTimeout   = 20 * time.Second
	changeTimeout  = 10 * time.Second
	frozenWindow   = 500 * time.Millisecond
	frozenDeadline = 300 * time.Millisecond
)

// box is one started sandbox under test.
type box struct {
	mu        sync.Mutex
	backend   sandbox.Backend // the backend that manages it now
	inst      sandbox.Instance
	key       string
	client    *runtime.Client
	destroyed bool
}

func (bx *box) current() sandbox.Backend {
	bx.mu.Lock()
	defer bx.mu.Unlock()
	return bx.backend
}

func (bx *box) adopt(b sandbox.Backend) {
	bx.mu.Lock()
	defer bx.mu.Unlock()
	bx.backend = b
}

// destroy destroys the sandbox through its current backend.
func (bx *box) destroy(t *testing.T) {
	t.Helper()
	if err := bx.current().Destroy(context.Background(), bx.inst); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	bx.mu.Lock()
	bx.destroyed = true
	bx.mu.Unlock()
}

// NewID returns a random sandbox id: 32 lowercase hex digits.
func NewID() string { return hex.EncodeToString(randomBytes(16)) }

// NewKey returns a random session key.
func NewKey() string { return hex.EncodeToString(randomBytes(32)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func (s *suite) spec() sandbox.Spec {
	spec := s.opts.Spec
	spec.Command = slices.Clone(spec.Command)
	spec.InitialEnv = maps.Clone(spec.InitialEnv)
	return spec
}

// start starts a sandbox from spec, waits for its runtime and destroys it at cleanup.
func (s *suite) start(t *testing.T, b sandbox.Backend, spec sandbox.Spec) *box {
	t.Helper()
	bx := &box{backend: b, key: NewKey()}
	id := NewID()
	inst, err := b.Start(context.Background(), sandbox.StartRequest{ID: id, OwnerID: "owner", Spec: spec, SessionKey: bx.key})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if inst.ID != id {
		t.Fatalf("start returned instance %q for sandbox %q", inst.ID, id)
	}
	bx.inst = inst
	t.Cleanup(func() {
		bx.mu.Lock()
		done := bx.destroyed
		bx.mu.Unlock()
		if !done {
			if err := bx.current().Destroy(context.Background(), inst); err != nil {
				t.Errorf("cleanup: destroy sandbox %s: %v", id, err)
			}
		}
	})
	bx.client, err = runtime.NewClient(inst.Endpoint, bx.key)
	if err != nil {
		t.Fatalf("client for %q: %v", inst.Endpoint, err)
	}
	t.Cleanup(bx.client.CloseIdleConnections)
	waitAnswers(t, bx.client)
	return bx
}

// waitAnswers waits until the runtime answers an authenticated request.
func waitAnswers(t *testing.T, c *runtime.Client) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Identity(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime did not answer within %v: %v", readyTimeout, err)
		}
		time.Sleep(delay)
	}
}

// answersNot checks that the runtime does not answer a liveness probe in time.
func answersNot(t *testing.T, c *runtime.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frozenDeadline)
	defer cancel()
	if err := c.Alive(ctx); err == nil {
		t.Fatal("the runtime of a paused sandbox answered")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("paused runtime: %v (want a timeout; a refused connection also means it does not serve)", err)
	}
}

func run(t *testing.T, c *runtime.Client, command string) runtime.CommandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Run(ctx, runtime.CommandRequest{Command: command})
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}

func inspect(t *testing.T, b sandbox.Backend, inst sandbox.Instance, want sandbox.State) {
	t.Helper()
	got, err := b.Inspect(context.Background(), inst)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if got != want {
		t.Fatalf("inspect: %s, want %s", got, want)
	}
}
