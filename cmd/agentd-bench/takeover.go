package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox/process"
	"github.com/agentd/agentd/internal/store/postgres"
)

// The takeover figure: a replica (`agentd serve` on PostgreSQL, in a process of its own, as an
// operator runs it) is killed with SIGKILL while its conversation's agent is in the middle of
// a model call or of a command, and its successor, the same node's replica started again on
// the same data directory, takes the conversation over; the figure is the time from the kill
// to the first event the successor records for it, beside the restart alone (from the kill
// until the successor serves).

// takeoverMarker in a conversation's first message, followed by "model N" or "command N",
// makes benchModel play the agent of a takeover round (takeoverStep).
const takeoverMarker = "agentd-bench takeover"

var takeoverRE = regexp.MustCompile(takeoverMarker + ` (model|command) \d+`)

// takeoverHang bounds a takeover call that hangs: the killed replica's connection ends it
// long before.
const takeoverHang = 2 * time.Minute

// takeoverStep is benchModel's answer to an agent's call in the takeover conversation key
// (the marker and its round) of kind "model" or "command"; called says whether the
// conversation has had a tool call. Its first call of kind model hangs until its client goes
// away (the replica is killed) and returns nil; of kind command, it asks for a command that
// lasts longer than the round. Both tell takeovers when the conversation is there. Once the
// conversation was taken over, the next call finishes it.
func (m *fakeModel) takeoverStep(ctx context.Context, key, kind string, called bool) map[string]any {
	if called {
		return toolCallMessage("call_finish", "finish", `{"message":"done"}`)
	}
	if kind == "command" {
		m.tellTakeover(key)
		return toolCallMessage("call_sleep", "terminal", `{"command":"sleep 60"}`)
	}
	m.mu.Lock()
	hung := m.hung[key]
	m.hung[key] = true
	m.mu.Unlock()
	if hung {
		return toolCallMessage("call_finish", "finish", `{"message":"done"}`)
	}
	m.tellTakeover(key)
	select {
	case <-ctx.Done():
	case <-time.After(takeoverHang):
	}
	return nil
}

// tellTakeover tells the bench that the takeover conversation key reached the point where
// its replica is to be killed.
func (m *fakeModel) tellTakeover(key string) {
	select {
	case m.takeovers <- key:
	default: // nobody waits for it
	}
}

// toolCallMessage is an assistant message with one tool call.
func toolCallMessage(callID, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": callID, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
}

// takeoverKinds are the points of a conversation at which the takeover rounds kill its
// replica.
var takeoverKinds = []string{"model", "command"}

// takeover is the state of the takeover figure: the replica running now, and what its
// successors are started with.
type takeover struct {
	agentd  string
	dataDir string
	args    []string
	logw    io.Writer
	cur     *serveProcess
	// st reads the conversations' logs from the database, beside the replicas.
	st *postgres.Store
	// notes are the database's notifications of appended events, as they arrived.
	notes     chan notification
	sandboxID string
}

// notification is one notification of agentd's events channel and when it arrived.
type notification struct {
	at      time.Time
	payload string
}

// benchTakeover runs o.takeoverRounds rounds of each of takeoverKinds, one replica after the
// other on one data directory: each round's successor is the next round's replica.
func benchTakeover(ctx context.Context, o options, pg *postgresServer, bin, dir string, logw io.Writer, progress func(string, ...any)) (_ []row, _ []string, err error) {
	agentd, err := agentdExecutable(ctx, o.binary, progress)
	if err != nil {
		return nil, nil, err
	}
	dbURL, err := pg.database(ctx, "takeover")
	if err != nil {
		return nil, nil, err
	}
	keyring := filepath.Join(dir, "takeover-keyring.json")
	if out, err := exec.CommandContext(ctx, agentd, "keyring", "create", keyring).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("agentd keyring create: %w: %s", err, out)
	}
	t := &takeover{agentd: agentd, dataDir: filepath.Join(dir, "to"), logw: logw,
		args: []string{"--database", dbURL, "--keyring-file", keyring}, notes: make(chan notification, 4096)}
	// Sandboxes outlive a killed server: whatever the figure leaves goes once the last
	// server has stopped.
	defer destroySandboxes(filepath.Join(t.dataDir, "sandboxes", "process"), bin, logw)
	defer func() {
		if t.cur != nil {
			t.cur.stop()
		}
	}()
	progress("takeover: starting agentd serve on PostgreSQL in a process of its own")
	if t.cur, err = startServeProcess(ctx, agentd, t.dataDir, logw, t.args...); err != nil {
		return nil, nil, err
	}
	if t.st, err = postgres.Open(ctx, dbURL, postgres.Options{}); err != nil {
		return nil, nil, err
	}
	defer t.st.Close()
	stopListening, err := t.listen(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	defer stopListening()
	if t.sandboxID, _, err = t.cur.startSandbox(ctx); err != nil {
		return nil, nil, err
	}

	served, first := map[string][]time.Duration{}, map[string][]time.Duration{}
	firstKinds := map[string]map[string]int{}
	for round := range o.takeoverRounds {
		for _, kind := range takeoverKinds {
			progress("takeover round %d of %d: SIGKILL of the replica in the middle of a %s", round+1, o.takeoverRounds, map[string]string{"model": "model call", "command": "command"}[kind])
			s, f, ev, err := t.round(ctx, kind, round)
			if err != nil {
				return nil, nil, fmt.Errorf("takeover round %d (%s): %w", round+1, kind, err)
			}
			served[kind], first[kind] = append(served[kind], s), append(first[kind], f)
			if firstKinds[kind] == nil {
				firstKinds[kind] = map[string]int{}
			}
			firstKinds[kind][eventLabel(ev)]++
		}
	}
	var rows []row
	var kinds []string
	base := "SIGKILL → the restarted replica serving (the restart alone)"
	for _, kind := range takeoverKinds {
		what := map[string]string{"model": "mid model call", "command": "mid command"}[kind]
		for _, p := range []float64{50, 100} {
			label := fmt.Sprintf("p%.0f", p)
			if p == 100 {
				label = "max"
			}
			rows = append(rows, timeRow(fmt.Sprintf("takeover: SIGKILL of a replica %s → first event its successor records (%d rounds), %s", what, len(first[kind]), label),
				p, first[kind], served[kind], base))
		}
		var seen []string
		for l, n := range firstKinds[kind] {
			seen = append(seen, fmt.Sprintf("%s ×%d", l, n))
		}
		kinds = append(kinds, fmt.Sprintf("%s: %s", what, strings.Join(seen, ", ")))
	}
	notes := []string{"takeover: `agentd serve` on PostgreSQL (--database, --keyring-file made by agentd keyring create, the process backend, the default --conversation-lease of 10 s) in a process of its own, killed with SIGKILL while its conversation's agent waits for a model call that never answers, or runs a command (sleep 60) in the sandbox; its successor is the same node's replica started again at once on the same data directory, which frees its earlier run's leases at once, finds the sandbox still running and takes the conversation over from its log. " +
		"The figure runs from the SIGKILL to the arrival, at a connection of the bench that LISTENs, of the notification of the first event the successor commits for the conversation (" + strings.Join(kinds, "; ") + "). " +
		"A takeover by another replica waits for the dead one's lease to lapse (--conversation-lease, 10 s), then for that replica's next look (every tenth of the lease, at most 1 s): it needs a sandbox backend that every replica reaches (kubernetes), and is not measured here: the deployment's end-to-end test on the test cluster (deploy) kills the replica that holds a conversation and logs how long the other took to ask the model for its next step."}
	return rows, notes, nil
}

// round runs one takeover round of kind: a conversation on the current replica, which is
// killed once the conversation is at kind's point; its successor becomes the current
// replica. It returns the times from the kill to the successor's serving and to the
// notification of its first event of the conversation, and that event.
func (t *takeover) round(ctx context.Context, kind string, n int) (served, first time.Duration, ev event.Event, err error) {
	key := fmt.Sprintf("%s %s %d", takeoverMarker, kind, n)
	body := map[string]any{"sandbox_id": t.sandboxID,
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": key}}}}
	taskID, err := t.cur.startConversation(ctx, body)
	if err != nil {
		return 0, 0, ev, err
	}
	if err := waitTakeover(ctx, key); err != nil {
		return 0, 0, ev, err
	}
	convIDs, err := t.cur.waitTasksReady(ctx, []string{taskID})
	if err != nil {
		return 0, 0, ev, err
	}
	conv := convIDs[0]
	if kind == "command" {
		// The command runs once its action is recorded and sent to the runtime.
		if err := t.waitEvent(ctx, conv, func(e event.Event) bool { return e.Kind == event.KindAction }); err != nil {
			return 0, 0, ev, err
		}
	}
	// Well inside the model call or the command.
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	t.cur.kill()
	evs, err := t.st.ConversationEvents(ctx, conv, 0)
	if err != nil || len(evs) == 0 {
		return 0, 0, ev, fmt.Errorf("the conversation's log: %d events, %v", len(evs), err)
	}
	last := evs[len(evs)-1].Seq
	next, err := startServeProcess(ctx, t.agentd, t.dataDir, t.logw, t.args...)
	if next != nil {
		t.cur = next
	}
	if err != nil {
		return 0, 0, ev, fmt.Errorf("start the successor: %w", err)
	}
	served = time.Since(start)
	at, err := t.firstAfter(ctx, conv, last)
	if err != nil {
		return 0, 0, ev, err
	}
	evs, err = t.st.ConversationEvents(ctx, conv, last)
	if err != nil || len(evs) == 0 {
		return 0, 0, ev, fmt.Errorf("the successor's events: %d, %v", len(evs), err)
	}
	// The next round starts from a finished conversation.
	if err := t.cur.waitFinished(ctx, conv, 2*time.Minute); err != nil {
		return 0, 0, ev, err
	}
	return served, at.Sub(start), evs[0], nil
}

// waitTakeover waits until benchModel tells that the takeover conversation key is at the
// point of its replica's death.
func waitTakeover(ctx context.Context, key string) error {
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case got := <-benchModel().takeovers:
			if got == key {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("%q did not reach its model call in 2 minutes", key)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitEvent polls the conversation's log until it holds an event that ok accepts.
func (t *takeover) waitEvent(ctx context.Context, conv string, ok func(event.Event) bool) error {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		evs, err := t.st.ConversationEvents(ctx, conv, 0)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if ok(e) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return errors.New("the conversation's action was not recorded in 2 minutes")
}

// listen LISTENs on agentd's events channel on a connection of its own and queues each
// notification, with its arrival time, in t.notes; stop ends it.
func (t *takeover) listen(ctx context.Context, dbURL string) (stop func(), err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+postgres.EventsChannel); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			select {
			case t.notes <- notification{at: time.Now(), payload: n.Payload}:
			default: // nobody reads them: the figure has failed
			}
		}
	}()
	return func() {
		cancel()
		<-done
		conn.Close(context.Background())
	}, nil
}

// firstAfter waits for the notification that the conversation has events after seq last, and
// returns when it arrived. The payload of an append's notification is "e <conversation id>
// <its last Seq>" (postgres.EventsChannel).
func (t *takeover) firstAfter(ctx context.Context, conv string, last int64) (time.Time, error) {
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case n := <-t.notes:
			f := strings.Fields(n.payload)
			if len(f) != 3 || f[0] != "e" || f[1] != conv {
				continue
			}
			if seq, err := strconv.ParseInt(f[2], 10, 64); err == nil && seq > last {
				return n.at, nil
			}
		case <-timeout:
			return time.Time{}, errors.New("the successor recorded no event of the conversation in 2 minutes")
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// eventLabel names an event for the notes: its kind, and a state update's key.
func eventLabel(e event.Event) string {
	var su event.StateUpdateEvent
	if e.Kind == event.KindStateUpdate && json.Unmarshal(e.Body, &su) == nil {
		return e.Kind + " " + su.Key
	}
	return e.Kind
}

// destroySandboxes destroys every sandbox of the process backend rooted at root: those a
// killed server left, and any other, once no server runs there.
func destroySandboxes(root, bin string, logw io.Writer) {
	log := benchLogger(logw)
	b, err := process.New(process.Options{Root: root, Binary: bin, Logger: log})
	if err != nil {
		log.Error("cleanup: open the process backend", "root", root, "err", err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	insts, err := b.List(ctx)
	if err != nil {
		log.Error("cleanup: list sandboxes", "err", err)
	}
	for _, inst := range insts {
		if err := b.Destroy(ctx, inst); err != nil {
			log.Error("cleanup: destroy sandbox", "sandbox_id", inst.ID, "err", err)
		}
	}
}
