package process

import (
	"context"
	"os/exec"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// BenchmarkStartToRunning measures Service.Start plus WaitRunning: from the request to a
// runtime that answers with its key. Compare with BenchmarkForkExecTrue, the floor of
// starting any process.
func BenchmarkStartToRunning(b *testing.B) {
	ctx := context.Background()
	store := sandboxtest.NewMemStore()
	if err := store.PutSpec(ctx, sandboxtest.RuntimeSpec("default")); err != nil {
		b.Fatal(err)
	}
	svc := sandbox.NewService(sandbox.ServiceOptions{
		Store:       store,
		Backend:     newTestBackend(b, shortRoot(b)),
		Sealer:      sandboxtest.Sealer{},
		DefaultSpec: "default",
	})
	defer svc.Close()
	b.ReportAllocs()
	for b.Loop() {
		sb, err := svc.Start(ctx, "bench", "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.WaitRunning(ctx, "bench", sb.ID); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := svc.Delete(ctx, "bench", sb.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkForkExecTrue measures fork, exec and wait of /bin/true.
func BenchmarkForkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
