package sqlite

import (
	"context"
	"sync/atomic"
)

// WAL checkpoints run beside the writer. SQLite's own (wal_autocheckpoint) runs inside the
// commit that takes the WAL past 1,000 pages: that commit copies the WAL's pages into the
// database file and syncs both, some ten milliseconds for which the writer, and every write
// queued behind it, waits (with agents appending a step at a time, one step in about ninety
// took that long). So the writer's connection checkpoints nothing itself (see dsn), and after
// every checkpointEvery commits the checkpointer runs a PASSIVE checkpoint on a reader
// connection: it takes no lock the writer needs, and it copies what no reader still needs.
// SQLite checkpoints once more when the last connection to the file closes.

// checkpointEvery is the number of commits between checkpoints: an agent step's append
// writes about ten pages, so about as many as SQLite's default of 1,000.
const checkpointEvery = 64

// checkpointer runs the checkpoints of a Store.
type checkpointer struct {
	commits atomic.Int64
	wake    chan struct{}
	// ctx ends when the checkpointer is closed, cutting a checkpoint in progress short.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// runs counts the checkpoints done.
	runs atomic.Int64
}

func newCheckpointer() *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	return &checkpointer{wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// committed notes a commit of the writer.
func (c *checkpointer) committed() {
	if c.commits.Add(1)%checkpointEvery == 0 {
		select {
		case c.wake <- struct{}{}:
		default: // one is due already
		}
	}
}

// run checkpoints with r, when woken, until closed. A checkpoint that fails (the file is
// busy in another process) is left to the next.
func (c *checkpointer) run(r *pool) {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		var busy, frames, copied int64
		if r.QueryRowContext(c.ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied) == nil {
			c.runs.Add(1)
		}
	}
}

// close stops the checkpointer and waits for it to end.
func (c *checkpointer) close() {
	c.cancel()
	<-c.done
}
