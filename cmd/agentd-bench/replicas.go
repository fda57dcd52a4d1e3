package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store/postgres"
)

// The replicas figures: agentd's servers on one PostgreSQL database, started by the bench on
// loopback (pgtest's server) and stopped with everything else it started, also when a figure
// fails. Each figure has a database of its own:
//
//   - an event appended through one replica, to its arrival at an SSE subscriber on another
//     (and on the same one), beside a bare NOTIFY → LISTEN round trip of the same bytes;
//   - agent steps on PostgreSQL, beside the same steps on SQLite;
//   - the takeover of a killed replica's conversation by its successor (takeover.go).
func benchReplicas(ctx context.Context, o options, bin, dir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	return onPostgres(ctx, dir, progress, func(pg *postgresServer) ([]row, []string, error) {
		var rows []row
		var notes []string
		for _, f := range []func() ([]row, []string, error){
			func() ([]row, []string, error) { return benchReplicaStreams(ctx, o, pg, bin, dir, logw, progress) },
			func() ([]row, []string, error) { return benchAgentPostgres(ctx, o, pg, bin, dir, logw, progress) },
			func() ([]row, []string, error) { return benchTakeover(ctx, o, pg, bin, dir, logw, progress) },
		} {
			r, n, err := f()
			if err != nil {
				return nil, nil, err
			}
			rows, notes = append(rows, r...), append(notes, n...)
		}
		return rows, notes, nil
	})
}

// onPostgres runs figures on a throwaway PostgreSQL server that it starts on loopback, with
// its files under dir, and stops when they are done, also when they fail.
func onPostgres(ctx context.Context, dir string, progress func(string, ...any), figures func(*postgresServer) ([]row, []string, error)) (_ []row, _ []string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	progress("starting PostgreSQL on loopback")
	start := time.Now()
	pg, err := startPostgres(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := pg.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("stop PostgreSQL: %w", cerr))
		}
	}()
	note := fmt.Sprintf("PostgreSQL %s started on loopback in %.1f s (initdb and pg_ctl, as the tests' pgtest starts it: fsync, synchronous_commit and full_page_writes off, so that a commit waits for no disk, as SQLite's in WAL mode with synchronous=NORMAL does not either).",
		pg.version(ctx), time.Since(start).Seconds())
	rows, notes, err := figures(pg)
	return rows, append([]string{note}, notes...), err
}

// startReplicas starts n servers (replicas) on the database at dbURL, each on a data
// directory of its own under dir, named name and its number (short: sandbox sockets live
// there), and so a node of its own, with the first's keyring, as replicas share one. On
// error none is left running.
func startReplicas(ctx context.Context, o options, bin, dir, name, dbURL string, n int, logw io.Writer) (_ []*server, err error) {
	var rs []*server
	defer func() {
		if err != nil {
			for _, s := range rs {
				s.close()
			}
		}
	}()
	var keyring []byte
	for i := range n {
		dataDir := filepath.Join(dir, fmt.Sprintf("%s%d", name, i+1))
		if i > 0 {
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dataDir, app.KeyringFile), keyring, 0o600); err != nil {
				return nil, err
			}
		}
		s, err := startPostgresServer(ctx, bin, dataDir, dbURL, o.clients, logw)
		if err != nil {
			return nil, err
		}
		rs = append(rs, s)
		if i == 0 {
			if keyring, err = os.ReadFile(filepath.Join(dataDir, app.KeyringFile)); err != nil {
				return nil, err
			}
		}
	}
	return rs, nil
}

// benchReplicaStreams times events appended through one replica to their arrival at an SSE
// subscriber on another, and on the same one, beside a bare NOTIFY → LISTEN round trip of
// the event's bytes on the same server.
func benchReplicaStreams(ctx context.Context, o options, pg *postgresServer, bin, dir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	dbURL, err := pg.database(ctx, "streams")
	if err != nil {
		return nil, nil, err
	}
	rs, err := startReplicas(ctx, o, bin, dir, "st", dbURL, 2, logw)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		for _, s := range rs {
			s.close()
		}
	}()
	a, b := rs[0], rs[1]
	sb, done, err := a.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	convID, err := a.quietConversation(ctx, sb.ID)
	if err != nil {
		return nil, nil, err
	}
	sample, err := event.NewUserMessage("00000000-0000-4000-8000-000000000000", time.Now(), streamMarker+strconv.Itoa(o.streamRounds), nil)
	if err != nil {
		return nil, nil, err
	}
	payload := string(sample.Body)

	rounds := o.streamRounds
	progress("timing %d bare NOTIFY → LISTEN round trips", rounds)
	bare, err := timeNotify(ctx, dbURL, payload, rounds)
	if err != nil {
		return nil, nil, err
	}
	progress("timing %d events appended on one replica to an SSE subscriber on another", rounds)
	across, err := b.timeStream(ctx, a, "SSE", sb.ID, convID, 1, rounds, nil)
	if err != nil {
		return nil, nil, err
	}
	progress("timing %d events appended on one replica to an SSE subscriber on the same", rounds)
	same, err := a.timeStream(ctx, a, "SSE", sb.ID, convID, 1, rounds, nil)
	if err != nil {
		return nil, nil, err
	}
	base := "a bare NOTIFY → LISTEN round trip of the event's bytes, same server"
	var rows []row
	for _, f := range []struct {
		what  string
		times []time.Duration
	}{
		{"event append on one replica → arrival at an SSE subscriber on another (PostgreSQL)", across.arrivals},
		{"event append on one replica → arrival at an SSE subscriber on the same (PostgreSQL)", same.arrivals},
	} {
		for _, p := range []float64{50, 99} {
			rows = append(rows, timeRow(fmt.Sprintf("%s, p%.0f", f.what, p), p, f.times, bare, base))
		}
	}
	notes := []string{fmt.Sprintf("replica streams: two servers (replicas) on one database, on data directories and so nodes of their own, with one keyring; %d rounds per figure, one at a time. "+
		"A round appends one user message through the first replica (its conversation service's SendMessage, as POST …/send-message does, and as the agent loop's records go: a transaction that appends the event and notifies %s, committed, then published to the replica's own subscribers) and ends when the SSE client (GET /api/v1/app-conversations/{id}/events/stream, with the admin's key) has read it. "+
		"The other replica learns of it from the notification (\"conversation X has events up to n\"), reads the new event from the database and writes it to its stream. "+
		"The primitive: one connection LISTENs, another runs pg_notify with the event's JSON (%d bytes), from before the NOTIFY to its arrival at the listener.",
		rounds, postgres.EventsChannel, len(payload))}
	return rows, notes, nil
}

// timeNotify times rounds NOTIFY → LISTEN round trips of payload on the database at dbURL:
// one connection listens, in a goroutine of its own, and another notifies; each round from
// before the NOTIFY to the notification's arrival.
func timeNotify(ctx context.Context, dbURL, payload string, rounds int) (_ []time.Duration, err error) {
	const channel = "agentd_bench"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	listener, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer listener.Close(context.WithoutCancel(ctx))
	if _, err := listener.Exec(ctx, "LISTEN "+channel); err != nil {
		return nil, err
	}
	notifier, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer notifier.Close(context.WithoutCancel(ctx))
	arrivals := make(chan time.Time, 1)
	listened := make(chan error, 1)
	go func() {
		for {
			if _, err := listener.WaitForNotification(ctx); err != nil {
				listened <- err
				return
			}
			arrivals <- time.Now()
		}
	}()
	defer func() {
		cancel()
		<-listened // the listener's connection is closed after its reader has left
	}()
	var out []time.Duration
	for i := range warmups + rounds {
		start := time.Now()
		if _, err := notifier.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload); err != nil {
			return nil, err
		}
		select {
		case at := <-arrivals:
			if i >= warmups {
				out = append(out, at.Sub(start))
			}
		case err := <-listened:
			return nil, fmt.Errorf("listen: %w", err)
		case <-time.After(time.Minute):
			return nil, errors.New("a notification took over a minute")
		}
	}
	return out, nil
}

// benchAgentPostgres times the agent figure's steps on a new server on PostgreSQL and on a
// new server on SQLite, one after the other, and sets the first beside the second.
func benchAgentPostgres(ctx context.Context, o options, pg *postgresServer, bin, dir string, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	dbURL, err := pg.database(ctx, "agent")
	if err != nil {
		return nil, nil, err
	}
	var onPG, onSQLite agentSteps
	for _, st := range []struct {
		name  string
		start func() (*server, error)
		steps *agentSteps
	}{
		{"PostgreSQL", func() (*server, error) {
			return startPostgresServer(ctx, bin, filepath.Join(dir, "ag"), dbURL, o.clients, logw)
		}, &onPG},
		{"SQLite", func() (*server, error) { return startServer(ctx, bin, filepath.Join(dir, "sq"), o.clients, logw, "") }, &onSQLite},
	} {
		progress("agent steps on %s", st.name)
		s, err := st.start()
		if err != nil {
			return nil, nil, err
		}
		*st.steps, err = timeAgentSteps(ctx, s, o, "agent-"+strings.ToLower(st.name), progress)
		s.close()
		if err != nil {
			return nil, nil, err
		}
	}
	var rows []row
	for _, tool := range agentTools {
		for _, p := range []float64{50, 99} {
			figure := fmt.Sprintf("agent step, control-plane overhead with %s (%d steps) on PostgreSQL, p%.0f", tool, len(onPG.overheads[tool]), p)
			rows = append(rows, timeRow(figure, p, onPG.overheads[tool], onSQLite.overheads[tool], "the same steps on SQLite, this run"))
		}
	}
	notes := []string{fmt.Sprintf("agent steps on PostgreSQL: the agent figure's steps (see its note) on a new server on PostgreSQL, then on a new server on SQLite; one model call through the SDK took %s at the median beside them (%s beside the SQLite ones); the terminal tool's own time, taken off, %s on PostgreSQL's server and %s on SQLite's.",
		unitTime.format(seconds(percentile(onPG.sdk, 50))), unitTime.format(seconds(percentile(onSQLite.sdk, 50))),
		unitTime.format(seconds(onPG.toolTime)), unitTime.format(seconds(onSQLite.toolTime)))}
	return rows, notes, nil
}
