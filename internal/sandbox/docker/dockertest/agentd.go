package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// BuildAgentd builds cmd/agentd, statically linked (CGO_ENABLED=0, as `make build` does), to
// out. Test binaries cannot serve as the runtime in a container: built with -race they are
// dynamically linked. The go command must be in PATH (go test puts it there).
func BuildAgentd(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "github.com/agentd/agentd/cmd/agentd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build a static agentd: %w\n%s", err, b)
	}
	return nil
}
