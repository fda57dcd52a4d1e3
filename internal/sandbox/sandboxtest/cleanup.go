package sandboxtest

import (
	"context"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

// TryStart calls b.Start(req), having first registered a cleanup that destroys sandbox req.ID
// through b when the test ends: the instance Start returned, or, where it failed, whatever a
// start cut short may have left. A test that fails anywhere after it leaves nothing behind.
// b must still work at cleanup (register its Close before calling TryStart).
func TryStart(t testing.TB, b sandbox.Backend, req sandbox.StartRequest) (sandbox.Instance, error) {
	t.Helper()
	return TryStartContext(context.Background(), t, b, req)
}

// TryStartContext is TryStart with the start's context.
func TryStartContext(ctx context.Context, t testing.TB, b sandbox.Backend, req sandbox.StartRequest) (sandbox.Instance, error) {
	t.Helper()
	var mu sync.Mutex
	started := sandbox.Instance{ID: req.ID}
	t.Cleanup(func() {
		mu.Lock()
		inst := started
		mu.Unlock()
		if err := b.Destroy(context.Background(), inst); err != nil {
			t.Errorf("cleanup: destroy sandbox %s: %v", inst.ID, err)
		}
	})
	inst, err := b.Start(ctx, req)
	if err == nil {
		mu.Lock()
		started = inst
		mu.Unlock()
	}
	return inst, err
}

// StartSandbox is TryStart that fails t when Start fails.
func StartSandbox(t testing.TB, b sandbox.Backend, req sandbox.StartRequest) sandbox.Instance {
	t.Helper()
	inst, err := TryStart(t, b, req)
	if err != nil {
		t.Fatalf("start sandbox %s: %v", req.ID, err)
	}
	return inst
}

// DestroyAllAtCleanup registers a cleanup that destroys every sandbox b lists when the test
// ends: for tests that start sandboxes through something else (the sandbox service, the HTTP
// API), where a failure would otherwise leave them running. b must still work at cleanup:
// call this after registering b's Close and before the first sandbox starts.
func DestroyAllAtCleanup(t testing.TB, b sandbox.Backend) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		insts, err := b.List(ctx)
		if err != nil {
			t.Errorf("cleanup: list sandboxes: %v", err)
			return
		}
		for _, inst := range insts {
			if err := b.Destroy(ctx, inst); err != nil {
				t.Errorf("cleanup: destroy sandbox %s: %v", inst.ID, err)
			}
		}
	})
}
