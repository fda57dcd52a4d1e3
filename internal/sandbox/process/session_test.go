package process

import (
	"context"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// TestWaitScansWantsTwoScansAlike: a scan that finds every process it lists stopped is not
// the end while the next scan finds another process (a child forked while the first scan
// listed the session, missing from it) or a pid used again; the wait ends at the first
// scan that finds the same processes as the one before, all stopped.
func TestWaitScansWantsTwoScansAlike(t *testing.T) {
	parent := hostproc.Stat{PID: 10, State: 'T', StartTime: 100}
	child := hostproc.Stat{PID: 11, State: 'R', StartTime: 101}
	stoppedChild := hostproc.Stat{PID: 11, State: 'T', StartTime: 101}
	reused := hostproc.Stat{PID: 11, State: 'T', StartTime: 205} // pid 11 again, another process
	scans := [][]hostproc.Stat{
		{parent},                        // the child is not listed yet
		{parent, child},                 // now it is, running
		{parent, stoppedChild},          // stopped
		{parent, reused},                // the child exited and its pid went to another process, stopped
		{parent, reused},                // the same as the scan before: the end
		{parent, {PID: 12, State: 'R'}}, // never reached
	}
	n := 0
	err := waitScans(context.Background(), "test", func() ([]hostproc.Stat, error) {
		n++
		return scans[n-1], nil
	}, time.Minute, hostproc.Stat.Stopped)
	if err != nil || n != 5 {
		t.Fatalf("the wait ended after %d scans (%v), want 5", n, err)
	}

	// A session whose processes are all gone ends once two scans find none.
	n = 0
	err = waitScans(context.Background(), "test", func() ([]hostproc.Stat, error) {
		n++
		return nil, nil
	}, time.Minute, hostproc.Stat.Stopped)
	if err != nil || n != 2 {
		t.Fatalf("an empty session ended after %d scans (%v), want 2", n, err)
	}
}
