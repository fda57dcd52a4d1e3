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

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
)

// Options tells Run what the backend under test is, what it keeps on the host, and which
// isolation it promises. A check that needs New, SandboxDir or StartFailure skips, naming the
// field, when it is unset: it never passes in silence.
type Options struct {
	// Spec is the spec sandboxes start from. It must run the agentd runtime (RuntimeSpec).
	Spec sandbox.Spec
	// Unsupported lists changes to Spec that the backend must refuse with sandbox.ErrUnsupported,
	// leaving nothing behind.
	Unsupported []SpecChange
	// Leftovers, if set, reports in the backend's own terms what is left on the machine of a
	// destroyed sandbox (processes, cgroups, containers, its directory); nil or empty means
	// nothing. It is also asked about sandboxes whose start failed, whose Instance has only an
	// ID.
	Leftovers func(inst sandbox.Instance) []string

	// New makes a backend of the kind under test on root, with binary as its agentd
	// executable and its other options as newBackend gives them. The suite checks that it
	// refuses an empty root, an empty binary and a binary that does not exist.
	New func(root, binary string) (sandbox.Backend, error)
	// Binary is an agentd executable New accepts; empty means the test binary (Binary). The
	// docker backend, for one, takes only a statically linked build.
	Binary string
	// MCPServer is the path, in the sandboxes, of the test MCP server program (the mcptest
	// package's mcpserver, see mcptest.BuildServer); empty means the runtime's own executable,
	// which is the test server when the runtime is the test binary (Binary empty).
	MCPServer string
	// SandboxDir returns the directory the backend keeps on the host for sandbox id. The
	// suite checks that a start never takes over, nor removes, a directory that exists
	// already, and that a failed start removes the one it made. Nil means the backend keeps no
	// directory per sandbox on the host.
	SandboxDir func(id string) string
	// StartFailure makes a start fail after the backend has begun to make the sandbox.
	StartFailure StartFailure
	// Env returns the variables, beyond Spec.InitialEnv, that the backend gives the runtime
	// of sandbox inst (and so its commands), with their values: those the suite checks. The
	// suite checks in any case that neither the server's environment nor the session key
	// reaches a sandbox.
	Env func(inst sandbox.Instance) map[string]string

	// Isolation the backend promises. The process backend promises none.

	// IsolatesFilesystem: a command can neither read nor write a host file outside its
	// workspace.
	IsolatesFilesystem bool
	// IsolatesSandboxes: a command sees neither the processes nor the files of another
	// sandbox.
	IsolatesSandboxes bool
	// IsolatesNetwork: with Network "none", a command cannot reach a port the host listens
	// on, through loopback or any of the host's addresses.
	IsolatesNetwork bool
	// LimitsMemory: with Limits.MemoryBytes set, a command that allocates without bound is
	// killed inside its sandbox, while the sandbox's runtime, other sandboxes and the host
	// carry on.
	LimitsMemory bool
	// LimitsPIDs: with Limits.PIDs set, a fork bomb is held below that many processes, and
	// destroying its sandbox ends it.
	LimitsPIDs bool

	// Confines: the backend passes the escape suite (testEscape) with its default network:
	// nothing of the host is reachable from a sandbox, nothing of a sandbox from the host,
	// the runtime is closed to the commands it runs, a setuid file gives no root, the default
	// limits hold, and egress reaches past the host.
	Confines bool
	// AgentdPath is where commands in a sandbox find the agentd binary (/.agentd/agentd).
	AgentdPath string
	// DefaultLimits are the limits of the server's default spec, which the escape suite's
	// memory hog and fork bomb run under.
	DefaultLimits sandbox.Limits
	// Netns is the path of the network namespace of the machine that runs the sandboxes
	// (/run/netns/NAME), when it is not this process's: a test cluster's node. The escape
	// suite's stand-ins for agentd listen there, and its stand-in for the internet is
	// joined to it.
	Netns string
	// KnownEscapes names escape probes the backend fails, each with the reason; they are
	// skipped with it rather than hidden.
	KnownEscapes map[string]string
}

// StartFailure is a change to Spec that the backend accepts (it is no ErrUnsupported) but
// cannot start, such as a command or an image that does not exist. Start must fail with an
// error that contains Cause, and leave nothing behind.
type StartFailure struct {
	Apply func(*sandbox.Spec)
	Cause string
}

// SpecChange is a named change to a spec.
type SpecChange struct {
	Name  string
	Apply func(*sandbox.Spec)
}

// Run runs the conformance suite against the backends newBackend returns.
//
// newBackend is called once per subtest, twice in the adoption test, and once at the end to
// check that nothing of the suite is left: every value it returns must see the same machine
// state (same root directory, same daemon), the way a new agentd process sees the sandboxes
// of the one before it. It should register the backend's Close with t.Cleanup.
func Run(t *testing.T, newBackend func(t *testing.T) sandbox.Backend, opts Options) {
	s := &suite{newBackend: newBackend, opts: opts}
	t.Run("New", s.testNew)
	t.Run("Check", s.testCheck)
	t.Run("BadIDs", s.testBadIDs)
	t.Run("StartNeedsKey", s.testStartNeedsKey)
	t.Run("StartKeepsExistingDirectory", s.testStartKeepsExistingDirectory)
	t.Run("StartFailureLeavesNothing", s.testStartFailureLeavesNothing)
	t.Run("StartAndAuth", s.testStartAndAuth)
	t.Run("RuntimeEnvironment", s.testRuntimeEnvironment)
	t.Run("Commands", s.testCommands)
	t.Run("Files", s.testFiles)
	t.Run("MCP", s.testMCP)
	t.Run("Workspace", s.testWorkspace)
	t.Run("PauseResume", s.testPauseResume)
	t.Run("Adoption", s.testAdoption)
	t.Run("Destroy", s.testDestroy)
	t.Run("DestroyPaused", s.testDestroyPaused)
	t.Run("List", s.testList)
	t.Run("Unsupported", s.testUnsupported)
	t.Run("Isolation", s.testIsolation)
	t.Run("Escape", s.testEscape)
	t.Run("Pooled", s.testPooled)
	// Every subtest destroys what it started when it ends, passed or failed, so the backend
	// finds nothing left of the suite.
	if ids := listIDs(t, newBackend(t)); len(ids) > 0 {
		t.Errorf("sandboxes left after the suite: %q", ids)
	}
}

type suite struct {
	newBackend func(t *testing.T) sandbox.Backend
	opts       Options
	// claimed: start starts sandboxes for a warm pool and claims them (pooled.go).
	claimed bool
}

// Bounds of the suite's waits. readyTimeout and changeTimeout bound loops that wait for
// something to happen and stop as soon as it does: they are generous, since a machine busy
// with other tests may take many seconds. frozenWindow and frozenDeadline are how long a
// paused sandbox is watched for a sign of life that must not come: a busy machine can only
// make such a check miss a fault, never fail a sound backend.
const (
	readyTimeout   = time.Minute
	changeTimeout  = time.Minute
	runTimeout     = 2 * time.Minute
	frozenWindow   = 500 * time.Millisecond
	frozenDeadline = 300 * time.Millisecond
)

// box is one started sandbox under test.
type box struct {
	mu        sync.Mutex
	backend   sandbox.Backend // the backend that manages it now
	inst      sandbox.Instance
	key       string
	secret    string // the pool's secret of a claimed sandbox
	client    *runtimeclient.Client
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
	bx.inst = sandbox.Instance{ID: id}
	// Registered before Start, so that whatever a start that fails half-way leaves is
	// destroyed too; by then the instance may have been adopted by another backend.
	t.Cleanup(func() {
		bx.mu.Lock()
		done, inst := bx.destroyed, bx.inst
		bx.mu.Unlock()
		if !done {
			if err := bx.current().Destroy(context.Background(), inst); err != nil {
				t.Errorf("cleanup: destroy sandbox %s: %v", id, err)
			}
		}
	})
	req := sandbox.StartRequest{ID: id, OwnerID: "owner", Spec: spec, SessionKey: bx.key}
	if s.claimed {
		bx.secret = NewKey()
		req = sandbox.StartRequest{ID: id, Spec: sandbox.PoolSpec(spec), PoolSecret: bx.secret, Pool: spec.ID}
	}
	inst, err := b.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if inst.ID != id {
		t.Fatalf("start returned instance %q for sandbox %q", inst.ID, id)
	}
	bx.mu.Lock()
	bx.inst = inst
	bx.mu.Unlock()
	if s.claimed {
		claim(t, b, inst, bx.secret, bx.key, spec.InitialEnv)
	}
	bx.client, err = NewClient(b, inst, bx.key)
	if err != nil {
		t.Fatalf("client for %q: %v", inst.Endpoint, err)
	}
	t.Cleanup(bx.client.CloseIdleConnections)
	waitAnswers(t, bx.client)
	return bx
}

// NewClient returns a client of the runtime of inst, through b's transport if it supplies
// one (sandbox.Transporter), as the sandbox service makes them.
func NewClient(b sandbox.Backend, inst sandbox.Instance, key string) (*runtimeclient.Client, error) {
	t, ok := b.(sandbox.Transporter)
	if !ok {
		return runtimeclient.NewClient(inst.Endpoint, key)
	}
	tr, err := t.Transport(inst)
	if err != nil {
		return nil, err
	}
	return runtimeclient.NewClientWith(inst.Endpoint, key, tr)
}

// waitAnswers waits until the runtime answers an authenticated request.
func waitAnswers(t *testing.T, c *runtimeclient.Client) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		// Each attempt gets what is left of the wait: on a busy machine one answer can take
		// seconds, and an attempt cut short would never see it.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_, err := c.Identity(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime did not answer within %v; last error: %v", readyTimeout, err)
		}
		time.Sleep(delay)
	}
}

// answersNot checks that the runtime does not answer a liveness probe in time.
func answersNot(t *testing.T, c *runtimeclient.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frozenDeadline)
	defer cancel()
	if err := c.Alive(ctx); err == nil {
		t.Fatal("the runtime of a paused sandbox answered")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("paused runtime: %v (want a timeout; a refused connection also means it does not serve)", err)
	}
}

func run(t *testing.T, c *runtimeclient.Client, command string) runtimeclient.CommandResult {
	t.Helper()
	return runWithin(t, c, command, runTimeout)
}

// hogTimeout bounds a command that works until a limit stops it: under a CPU limit, on a
// machine busy with other tests, pushing gigabytes through a pipe takes minutes.
const hogTimeout = 10 * time.Minute

// runWithin is run with its own bound, for the runtime and for the wait.
func runWithin(t *testing.T, c *runtimeclient.Client, command string, within time.Duration) runtimeclient.CommandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := c.Run(ctx, runtimeclient.CommandRequest{Command: command, TimeoutSeconds: int(within / time.Second)})
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
