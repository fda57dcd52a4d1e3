package process

import (
	"context"
	"fmt"
	"os"

	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// List returns a sandbox for every directory under Root. Where a runtime process listening on
// that sandbox's socket is found (by its command line), State records it, so an orphan can be
// destroyed; otherwise State is empty and Destroy only removes the directory.
func (b *Backend) List(_ context.Context) ([]sandbox.Instance, error) {
	entries, err := os.ReadDir(b.root.Path)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	runtimes, err := b.findRuntimes()
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var out []sandbox.Instance
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir, err := b.dir(e.Name())
		if err != nil {
			continue
		}
		inst := sandbox.Instance{
			ID:            e.Name(),
			Endpoint:      listenArg(dir),
			Workspace:     workspacePath(dir),
			HostWorkspace: workspacePath(dir),
		}
		if st, ok := runtimes[listenArg(dir)]; ok {
			inst.State = st.encode()
		}
		out = append(out, inst)
	}
	return out, nil
}

// findRuntimes maps the --listen argument of every session leader that has one to its
// process. Only session leaders count: the runtime is one, and a command that merely mentions
// the flag is not.
func (b *Backend) findRuntimes() (map[string]instanceState, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	found := map[string]instanceState{}
	for _, pid := range pids {
		p, err := hostproc.ReadStat(pid)
		if err != nil || p.Session != pid || p.Dead() {
			continue
		}
		args, err := readCmdline(pid)
		if err != nil {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--listen" {
				found[args[i+1]] = instanceState{PID: pid, StartTime: p.StartTime}
			}
		}
	}
	return found, nil
}
