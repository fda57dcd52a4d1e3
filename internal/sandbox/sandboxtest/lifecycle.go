package sandboxtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
)

// counterScript increments a number in the file counter every 50ms, in the background.
const counterScript = `(i=0; while true; do i=$((i+1)); echo $i > counter; sleep 0.05; done) > /dev/null 2>&1 &`

// testPauseResume: pausing freezes every process (a background counter stops, the runtime
// stops answering); resuming thaws them. A backend that cannot freeze (Capabilities.Freeze
// unset) stops them instead and keeps the workspace (pauseResumeStops).
func (s *suite) testPauseResume(t *testing.T) {
	b := s.newBackend(t)
	bx := s.start(t, b, s.spec())
	if !b.Capabilities().Freeze {
		s.pauseResumeStops(t, b, bx)
		return
	}
	if bx.inst.HostWorkspace == "" {
		s.pauseResumeWithoutHost(t, b, bx)
		return
	}
	ctx := context.Background()
	counter := filepath.Join(bx.inst.HostWorkspace, "counter")
	run(t, bx.client, counterScript)
	waitAdvance(t, counter)

	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StatePaused)
	staysStill(t, counter)
	answersNot(t, bx.client)
	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause twice: %v", err)
	}

	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StateRunning)
	waitAdvance(t, counter)
	waitAnswers(t, bx.client)
	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume twice: %v", err)
	}
}

// pauseResumeStops is testPauseResume for a backend whose pause stops the sandbox's
// processes: once paused, none is left and the runtime does not answer; once resumed, the
// runtime answers again, in a sandbox whose workspace holds what it held, and whose
// processes are new.
func (s *suite) pauseResumeStops(t *testing.T, b sandbox.Backend, bx *box) {
	ctx := context.Background()
	marker := "sleep " + markerSeconds()
	run(t, bx.client, "printf kept > kept && ("+marker+"; true) > /dev/null 2>&1 &")
	waitProcess(t, marker)

	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StatePaused)
	answersNot(t, bx.client)
	if left := processesWith(marker, bx.inst.ID); len(left) > 0 {
		t.Fatalf("processes of a paused sandbox that cannot freeze are left: %q", left)
	}
	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause twice: %v", err)
	}

	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StateRunning)
	waitAnswers(t, bx.client)
	if res := run(t, bx.client, "cat kept"); res.Output != "kept" {
		t.Fatalf("the workspace after a pause and a resume: %+v, want the file written before", res)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Fatalf("a process from before the pause runs after the resume: %q", left)
	}
	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume twice: %v", err)
	}
}

// testAdoption: a new backend value, as after a restart of agentd, manages a sandbox that an
// earlier (closed) one started.
func (s *suite) testAdoption(t *testing.T) {
	old := s.newBackend(t)
	bx := s.start(t, old, s.spec())
	if err := old.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := old.Close(); err != nil {
		t.Fatalf("close twice: %v", err)
	}
	waitAnswers(t, bx.client) // closing the backend leaves the sandbox running

	b := s.newBackend(t)
	bx.adopt(b)
	ctx := context.Background()
	inspect(t, b, bx.inst, sandbox.StateRunning)
	if !slices.Contains(listIDs(t, b), bx.inst.ID) {
		t.Fatal("the new backend does not list the sandbox")
	}
	if res := run(t, bx.client, "echo adopted > adopted && cat adopted"); res.Output != "adopted\n" {
		t.Fatalf("a command in the adopted sandbox: %+v", res)
	}
	if err := b.Pause(ctx, bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	inspect(t, b, bx.inst, sandbox.StatePaused)
	answersNot(t, bx.client)
	if err := b.Resume(ctx, bx.inst); err != nil {
		t.Fatalf("resume: %v", err)
	}
	waitAnswers(t, bx.client)
	s.destroyAndCheck(t, bx, "")
}

// testDestroy: nothing of the sandbox is left, and destroying twice is fine.
func (s *suite) testDestroy(t *testing.T) {
	bx := s.start(t, s.newBackend(t), s.spec())
	marker := "sleep " + markerSeconds()
	run(t, bx.client, "("+marker+"; true) > /dev/null 2>&1 &")
	waitProcess(t, marker)
	s.destroyAndCheck(t, bx, marker)
}

// testDestroyPaused: a frozen sandbox is destroyed as well.
func (s *suite) testDestroyPaused(t *testing.T) {
	b := s.newBackend(t)
	bx := s.start(t, b, s.spec())
	marker := "sleep " + markerSeconds()
	run(t, bx.client, "("+marker+"; true) > /dev/null 2>&1 &")
	waitProcess(t, marker)
	if err := b.Pause(context.Background(), bx.inst); err != nil {
		t.Fatalf("pause: %v", err)
	}
	s.destroyAndCheck(t, bx, marker)
}

// destroyAndCheck destroys bx and checks that no process whose command line names the
// sandbox (the runtime) or marker is left, nor its host workspace, nor what Leftovers finds.
func (s *suite) destroyAndCheck(t *testing.T, bx *box, marker string) {
	t.Helper()
	b := bx.current()
	bx.destroy(t)
	inspect(t, b, bx.inst, sandbox.StateGone)
	needles := []string{bx.inst.ID}
	if marker != "" {
		needles = append(needles, marker)
	}
	if left := processesWith(needles...); len(left) > 0 {
		t.Fatalf("processes left after destroy: %q", left)
	}
	if bx.inst.HostWorkspace != "" {
		if _, err := os.Stat(bx.inst.HostWorkspace); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("host workspace left after destroy: %v", err)
		}
	}
	if s.opts.Leftovers != nil {
		if left := s.opts.Leftovers(bx.inst); len(left) > 0 {
			t.Fatalf("left after destroy: %q", left)
		}
	}
	if slices.Contains(listIDs(t, b), bx.inst.ID) {
		t.Fatal("a destroyed sandbox is still listed")
	}
	if err := b.Destroy(context.Background(), bx.inst); err != nil {
		t.Fatalf("destroy twice: %v", err)
	}
}

// testList: List finds a started sandbox.
func (s *suite) testList(t *testing.T) {
	b := s.newBackend(t)
	bx := s.start(t, b, s.spec())
	if !slices.Contains(listIDs(t, b), bx.inst.ID) {
		t.Fatalf("List does not contain %s", bx.inst.ID)
	}
}

// testUnsupported: what the backend cannot do is refused with ErrUnsupported, and nothing of
// the refused sandbox is left.
func (s *suite) testUnsupported(t *testing.T) {
	if len(s.opts.Unsupported) == 0 {
		t.Skip("the backend supports every spec the suite knows")
	}
	for _, change := range s.opts.Unsupported {
		t.Run(change.Name, func(t *testing.T) {
			b := s.newBackend(t)
			spec := s.spec()
			change.Apply(&spec)
			id := NewID()
			_, err := TryStart(t, b, sandbox.StartRequest{ID: id, Spec: spec, SessionKey: NewKey()})
			if err == nil {
				t.Fatal("start succeeded")
			}
			if !errors.Is(err, sandbox.ErrUnsupported) {
				t.Fatalf("start: %v, want ErrUnsupported", err)
			}
			s.checkNothingOf(t, b, id)
		})
	}
}

func listIDs(t *testing.T, b sandbox.Backend) []string {
	t.Helper()
	insts, err := b.List(context.Background())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	ids := make([]string, len(insts))
	for i, inst := range insts {
		ids[i] = inst.ID
	}
	return ids
}

// waitAdvance waits until the number in path changes.
func waitAdvance(t *testing.T, path string) {
	t.Helper()
	first := readTrim(path)
	deadline := time.Now().Add(changeTimeout)
	for {
		v := readTrim(path)
		if v != "" && v != first {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not change from %q within %v (last read %q)", path, first, changeTimeout, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// staysStill checks that the file at path does not change for a while (ten of the counter's
// periods).
func staysStill(t *testing.T, path string) {
	t.Helper()
	first := readTrim(path)
	for end := time.Now().Add(frozenWindow); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		if v := readTrim(path); v != first {
			t.Fatalf("%s changed from %q to %q in a paused sandbox", path, first, v)
		}
	}
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}
