package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/sandbox/bwrap"
)

// The warm pool figures: a start claimed from a warm pool beside a cold start of the same
// spec and the bare primitive, and a conversation's creation to its first model request with
// the pool. The targets, on a quiet machine:
const (
	poolBwrapGoal        = 5 * time.Millisecond
	poolDockerGoal       = 20 * time.Millisecond
	poolConversationGoal = 15 * time.Millisecond
)

// poolReadyTimeout bounds the wait for a pool to refill between two timed claims.
const poolReadyTimeout = 2 * time.Minute

// benchPools measures the bwrap backend with a warm pool of one sandbox of the default spec
// (network egress), on a server of its own (data directory dataDir).
func benchPools(ctx context.Context, o options, bin, dataDir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	log := benchLogger(logw)
	b, err := bwrap.New(bwrap.Options{Root: filepath.Join(dataDir, "sandboxes", "bwrap"), Binary: bin, Logger: log})
	if err == nil {
		if err = b.Probe(ctx); err != nil {
			b.Close()
		}
	}
	if err != nil {
		return nil, []string{"pool rows skipped: the bwrap backend does not work here: " + err.Error()}, nil
	}
	s, err := startPooledServer(ctx, b, dataDir, 1, log)
	if err != nil {
		return nil, nil, err
	}
	defer s.close()

	progress("timing %d bwrap starts claimed from a warm pool", o.starts)
	var warm, cold, bare []time.Duration
	for i := range warmups + o.starts {
		bt, err := timeFunc(func() error { return b.BareRun(ctx, sandbox.NetworkEgress, "true") })
		if err != nil {
			return nil, nil, err
		}
		w, err := s.timeClaim(ctx)
		if err != nil {
			return nil, nil, err
		}
		c, err := s.timeStartOf(ctx, specCold)
		if err != nil {
			return nil, nil, err
		}
		if i >= warmups {
			warm, cold, bare = append(warm, w), append(cold, c), append(bare, bt)
		}
	}

	// The same conversations on a second server whose data directory (its store, its
	// sandboxes' workspaces) is in memory, alternated with the first's: what of the figure is
	// the machine's disk. Where there is no /dev/shm, the figure is left out.
	mem, closeMem, err := startMemoryPoolServer(ctx, bin, log)
	if err != nil {
		return nil, nil, err
	}
	defer closeMem()

	progress("timing %d conversations from creation to their first model request, with a warm pool", o.starts)
	var convs, claims, memConvs []time.Duration
	// Each step begins once both servers' pools are full: a refill of one would otherwise
	// share the CPUs with the other's timed start.
	full := func() error {
		if mem != nil {
			if err := mem.waitPool(ctx, 1); err != nil {
				return err
			}
		}
		return s.waitPool(ctx, 1)
	}
	for i := range warmups + o.starts {
		if err := full(); err != nil {
			return nil, nil, err
		}
		c, err := s.timeConversation(ctx)
		if err != nil {
			return nil, nil, err
		}
		if err := full(); err != nil {
			return nil, nil, err
		}
		w, err := s.timeClaim(ctx)
		if err != nil {
			return nil, nil, err
		}
		var m time.Duration
		if mem != nil {
			if err := full(); err != nil {
				return nil, nil, err
			}
			if m, err = mem.timeConversation(ctx); err != nil {
				return nil, nil, err
			}
		}
		if i >= warmups {
			convs, claims = append(convs, c), append(claims, w)
			if mem != nil {
				memConvs = append(memConvs, m)
			}
		}
	}

	const bareBase = "bare `bwrap … true`, its own network namespace with slirp4netns up"
	rows := []row{
		timeRow("sandbox start to RUNNING claimed from a warm pool (bwrap backend, network egress), p50", 50, warm, bare, bareBase),
		timeRow("sandbox start to RUNNING claimed from a warm pool (bwrap backend, network egress), p99", 99, warm, bare, bareBase),
		timeRow("sandbox start to RUNNING claimed from a warm pool (bwrap backend, network egress), p50", 50, warm, cold, "a cold start of the same spec"),
		timeRow("sandbox start to RUNNING claimed from a warm pool (bwrap backend, network egress), p99", 99, warm, cold, "a cold start of the same spec"),
		timeRow("conversation creation (POST) to its first model request, warm pool (bwrap backend), p50", 50, convs, claims, "a claim from the pool alone"),
		timeRow("conversation creation (POST) to its first model request, warm pool (bwrap backend), p99", 99, convs, claims, "a claim from the pool alone"),
	}
	notes := []string{
		goalNote("bwrap warm claim", percentile(warm, 50), poolBwrapGoal) + fmt.Sprintf(" The cold start of the same spec: p50 %v.", percentile(cold, 50).Round(10*time.Microsecond)),
		goalNote("conversation creation to the first model request with a warm pool", percentile(convs, 50), poolConversationGoal),
	}
	if mem != nil {
		rows = append(rows,
			timeRow("conversation creation (POST) to its first model request, warm pool (bwrap backend), data directory in memory, p50", 50, memConvs, convs, "the same with the data directory on disk"),
			timeRow("conversation creation (POST) to its first model request, warm pool (bwrap backend), data directory in memory, p99", 99, memConvs, convs, "the same with the data directory on disk"))
		notes = append(notes, "data directory in memory: a second server like the first, on a data directory under /dev/shm (a tmpfs: its store, and its sandboxes' workspaces, where git init makes each conversation's repository), its conversations alternated with the first's; the difference is what the machine's disk costs the figure.")
	}
	return rows, notes, nil
}

// startMemoryPoolServer starts a server like benchPools' on a data directory under /dev/shm
// (a tmpfs), and returns it with what stops it and removes that directory; no server where
// /dev/shm is not a directory.
func startMemoryPoolServer(ctx context.Context, bin string, log *slog.Logger) (*server, func(), error) {
	const dir = "/dev/shm"
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, func() {}, nil
	}
	dataDir, err := os.MkdirTemp(dir, "agentd-bench-pools-")
	if err != nil {
		return nil, nil, err
	}
	b, err := bwrap.New(bwrap.Options{Root: filepath.Join(dataDir, "sandboxes", "bwrap"), Binary: bin, Logger: log})
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, nil, err
	}
	s, err := startPooledServer(ctx, b, dataDir, 1, log)
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, nil, err
	}
	return s, func() {
		s.close()
		os.RemoveAll(dataDir)
	}, nil
}

// goalNote says whether the p50 p met goal.
func goalNote(what string, p, goal time.Duration) string {
	verdict := "met"
	if p >= goal {
		verdict = "NOT met"
	}
	return fmt.Sprintf("%s goal (p50 under %v on a quiet machine): %s (p50 %v).", what, goal, verdict, p.Round(10*time.Microsecond))
}

// waitPool waits until the default spec's warm pool holds n sandboxes.
func (s *server) waitPool(ctx context.Context, n int) error {
	svc := s.app.Sandboxes
	deadline := time.Now().Add(poolReadyTimeout)
	for svc.PoolReady("") < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("the warm pool did not refill to %d within %v", n, poolReadyTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// timeClaim waits for the pool to be full, then times a start of the default spec to
// RUNNING, which must come from the pool, and deletes the sandbox.
func (s *server) timeClaim(ctx context.Context) (time.Duration, error) {
	if err := s.waitPool(ctx, 1); err != nil {
		return 0, err
	}
	svc := s.app.Sandboxes
	t0 := time.Now()
	sb, err := svc.Start(ctx, s.ownerID, "")
	if err == nil {
		_, err = svc.WaitRunning(ctx, s.ownerID, sb.ID)
	}
	d := time.Since(t0)
	if err == nil && sb.Status != sandbox.StatusRunning {
		err = fmt.Errorf("sandbox %s did not come from the warm pool (%s)", sb.ID, sb.Status)
	}
	if sb.ID != "" {
		if derr := svc.Delete(context.WithoutCancel(ctx), s.ownerID, sb.ID); derr != nil && err == nil {
			err = derr
		}
	}
	return d, err
}

// timeConversation waits for the pool to be full, then times a conversation from its
// creation (the POST) to the arrival of its first model request, and deletes its sandbox
// once the agent is done.
func (s *server) timeConversation(ctx context.Context) (time.Duration, error) {
	if err := s.waitPool(ctx, 1); err != nil {
		return 0, err
	}
	tag := strings.ToLower(rand.Text())
	first := benchModel().expectFirst(tag)
	body := map[string]any{"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": firstMarker + tag}}}}
	t0 := time.Now()
	if _, err := s.startConversation(ctx, body); err != nil {
		return 0, err
	}
	var d time.Duration
	select {
	case at := <-first:
		d = at.Sub(t0)
	case <-time.After(poolReadyTimeout):
		return 0, fmt.Errorf("no model request within %v of a conversation's creation", poolReadyTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	s.waitIdle()
	svc := s.app.Sandboxes
	sbs, _, err := svc.Search(ctx, s.ownerID, paging.Query{Limit: 100})
	if err != nil {
		return 0, err
	}
	for _, sb := range sbs {
		if err := svc.Delete(context.WithoutCancel(ctx), s.ownerID, sb.ID); err != nil {
			return 0, err
		}
	}
	return d, nil
}
