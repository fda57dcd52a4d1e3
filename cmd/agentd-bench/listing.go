package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// The listing figures: every list and search endpoint, 100 per page, over a store of a given
// number of rows, beside the same answer's bytes served by a plain net/http handler with the
// same clients: what agentd adds to the bytes it has to send.

// listingEndpoint is one endpoint of the figures, its path made from the seeded ids, and the
// store's read behind it as the handler makes it.
type listingEndpoint struct {
	name string
	path func(seed listingSeed) string
	read func(ctx context.Context, st store.Store, owner string, seed listingSeed) error
}

var page100 = paging.Query{Limit: 100}

var listingEndpoints = []listingEndpoint{
	{"conversations (GET /api/v1/app-conversations/search)", func(listingSeed) string { return "/api/v1/app-conversations/search?limit=100" },
		func(ctx context.Context, st store.Store, owner string, _ listingSeed) error {
			_, _, err := st.ListConversations(ctx, owner, conversation.Filter{}, page100)
			return err
		}},
	{"V0 conversations (GET /api/conversations)", func(listingSeed) string { return "/api/conversations?limit=100" },
		func(ctx context.Context, st store.Store, owner string, _ listingSeed) error {
			_, _, err := st.ListConversations(ctx, owner, conversation.Filter{}, page100)
			return err
		}},
	{"start tasks (GET /api/v1/app-conversations/start-tasks/search)", func(listingSeed) string {
		return "/api/v1/app-conversations/start-tasks/search?limit=100"
	}, func(ctx context.Context, st store.Store, owner string, _ listingSeed) error {
		_, _, err := st.ListStartTasks(ctx, owner, conversation.TaskFilter{}, conversation.SortCreatedAtDesc, page100)
		return err
	}},
	{"sandboxes (GET /api/v1/sandboxes/search)", func(listingSeed) string { return "/api/v1/sandboxes/search?limit=100" },
		func(ctx context.Context, st store.Store, owner string, _ listingSeed) error {
			_, _, err := st.ListSandboxes(ctx, owner, page100)
			return err
		}},
	{"events of a conversation (GET /api/v1/conversation/{id}/events/search)", func(s listingSeed) string {
		return "/api/v1/conversation/" + s.longConversation + "/events/search?limit=100"
	}, func(ctx context.Context, st store.Store, owner string, s listingSeed) error {
		_, _, err := st.SearchEvents(ctx, owner, event.Filter{ConversationID: s.longConversation}, false, page100)
		return err
	}},
}

// listingSeed is what seedListing stored, and where.
type listingSeed struct {
	// dataDir holds the SQLite store and the keyring that sealed its secrets.
	dataDir string
	// longConversation has the n events.
	longConversation string
	took             time.Duration
}

// listingSeeds are the listing stores seeded in a run, by their numbers of rows, whose
// servers have stopped: the PostgreSQL listing figures copy them rather than seed anew.
type listingSeeds map[int]listingSeed

// benchListing measures the listing figures at each number of rows, each on a server of its
// own whose store holds rows conversations (with their start tasks and first events) in one
// running sandbox, rows sandbox records (MISSING: their processes are long gone, so that the
// watcher has nothing to do with them) and one conversation with rows events. Each store is
// kept in seeded once its server has stopped.
func benchListing(ctx context.Context, o options, bin, dir string, seeded listingSeeds, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	var rows []row
	var notes []string
	for _, n := range o.listingRows {
		s, err := startServer(ctx, bin, filepath.Join(dir, fmt.Sprintf("listing-%d", n)), o.clients, logw, "")
		if err != nil {
			return nil, nil, err
		}
		var seed listingSeed
		r, nt, err := func() ([]row, []string, error) {
			defer s.close()
			progress("storing %d conversations, start tasks, sandboxes and events for the listing figures", n)
			seed, err = s.seedListing(ctx, filepath.Join(dir, fmt.Sprintf("listing-%d", n)), n)
			if err != nil {
				return nil, nil, err
			}
			notes := []string{fmt.Sprintf("listing store of %d rows each: seeded directly in the store in %.1f s.", n, seed.took.Seconds())}
			// A store of its own on the server's file, for the store's reads alone.
			st, err := sqlite.Open(ctx, filepath.Join(dir, fmt.Sprintf("listing-%d", n), app.DBFile))
			if err != nil {
				return nil, nil, err
			}
			defer st.Close()
			var rows []row
			for _, ep := range listingEndpoints {
				read := func() error { return ep.read(ctx, st, s.ownerID, seed) }
				r, note, err := s.benchEndpoint(ctx, o, sqliteListing, ep.name, ep.path(seed), n, read, progress)
				if err != nil {
					return nil, nil, err
				}
				rows = append(rows, r...)
				notes = append(notes, note)
			}
			return rows, notes, nil
		}()
		if err != nil {
			return nil, nil, err
		}
		seeded[n] = seed
		rows, notes = append(rows, r...), append(notes, nt...)
	}
	notes = append(notes, "listing figures: the primitive serves the very bytes of agentd's answer (read once before the load) from a plain net/http handler on its own loopback listener, to the same clients for the same time. The store's read alone is the read the handler makes, by a second store on the server's database file in this process: what of agentd's CPU time per request is SQLite's.")
	return rows, notes, nil
}

// listingStore is the kind of store a listing figure runs on.
type listingStore struct {
	// name says, in the figures, what the store's read goes through.
	name string
	// cpu is the CPU time used so far by this process and, with cpuAlso, by the store's own
	// processes.
	cpu     func() (time.Duration, error)
	cpuAlso string
	// profile begins the names of the figure's profiles (-profile).
	profile string
}

var sqliteListing = listingStore{name: "SQLite through database/sql", cpu: processCPU, profile: "listing"}

// benchEndpoint loads path on agentd, whose store is of kind ls, and its bytes on a plain
// handler and returns the throughput, p99 and CPU rows.
func (s *server) benchEndpoint(ctx context.Context, o options, ls listingStore, name, path string, n int, read func() error, progress func(string, ...any)) ([]row, string, error) {
	body, err := s.getBytes(ctx, path)
	if err != nil {
		return nil, "", err
	}
	var cpu time.Duration
	plain, err := servePlain(body)
	if err != nil {
		return nil, "", err
	}
	defer plain.close()
	progress("loading %s over %d rows (%d bytes), %d clients, %v", name, n, len(body), o.clients, o.duration)
	warm := min(o.duration/5, time.Second)
	if _, err := s.loadURL(ctx, plain.url+path, o.clients, warm); err != nil {
		return nil, "", err
	}
	if _, err := s.load(ctx, path, o.clients, warm); err != nil {
		return nil, "", err
	}
	stopProfile, err := s.profile(o, fmt.Sprintf("%s-%s-%d", ls.profile, shortName(name), n))
	if err != nil {
		return nil, "", err
	}
	got, err := s.load(ctx, path, o.clients, o.duration)
	if err == nil {
		cpu, err = cpuPerRequest(ls.cpu, s.app.Handler(), path, s.key, 200)
	}
	stopProfile()
	if err != nil {
		return nil, "", err
	}
	bare, err := s.loadURL(ctx, plain.url+path, o.clients, o.duration)
	if err != nil {
		return nil, "", err
	}
	bareCPU, err := cpuPerRequest(processCPU, plain.srv.Handler, path, s.key, 2000)
	if err != nil {
		return nil, "", err
	}
	storeCPU, err := cpuPer(ls.cpu, 200, read)
	if err != nil {
		return nil, "", err
	}
	base := "the same bytes from a plain net/http handler"
	what := fmt.Sprintf("%s, 100 per page of %d rows, %d clients", name, n, o.clients)
	rows := []row{
		{figure: what + ", throughput", agentd: got.rate(), primitive: bare.rate(), unit: unitRate, baseline: base},
		timeRow(what+", p99 latency", 99, got.latencies, bare.latencies, base),
		{figure: what + ", CPU time per request (in process, no network" + ls.cpuAlso + ")", agentd: cpu.Seconds(), primitive: bareCPU.Seconds(), unit: unitTime, baseline: base},
		{figure: what + ", CPU time of the store's read alone (" + ls.name + ")", agentd: storeCPU.Seconds(), primitive: bareCPU.Seconds(), unit: unitTime, baseline: base},
	}
	note := fmt.Sprintf("%s over %d rows: %d bytes; p50 %s against %s.", name, n, len(body),
		unitTime.format(seconds(percentile(got.latencies, 50))), unitTime.format(seconds(percentile(bare.latencies, 50))))
	return rows, note, nil
}

func shortName(name string) string {
	for i, c := range name {
		if c == ' ' {
			return name[:i]
		}
	}
	return name
}

// plainServer serves fixed bytes as JSON on a loopback listener of its own.
type plainServer struct {
	url  string
	srv  *http.Server
	done chan struct{}
}

func servePlain(body []byte) (*plainServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &plainServer{url: "http://" + ln.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})}}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

func (p *plainServer) close() {
	p.srv.Close()
	<-p.done
}

// getBytes reads the answer to GET path as the admin; anything but 200 is an error.
func (s *server) getBytes(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Session-API-Key", s.key)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// seedListing stores n conversations like one made through the API (with its start task and
// first events) in one running sandbox, n sandbox records and one conversation of n events,
// through a second store on the server's database file.
//
// The sandbox is deleted before the copies are stored: its deletion records its status on
// each of its conversations, which took minutes for 100,000, and the copies carry those
// events as the conversation they copy has them.
func (s *server) seedListing(ctx context.Context, dataDir string, n int) (listingSeed, error) {
	sb, done, err := s.runningSandbox(ctx)
	defer func() { done() }()
	if err != nil {
		return listingSeed{}, err
	}
	ids, err := s.seedConversationIDs(ctx, sb.ID, 1)
	if err != nil {
		return listingSeed{}, err
	}
	// One conversation to hold n events, like an agent's.
	long, err := s.seedConversationIDs(ctx, sb.ID, 1)
	if err != nil {
		return listingSeed{}, err
	}
	s.waitIdle()
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, app.DBFile))
	if err != nil {
		return listingSeed{}, err
	}
	defer st.Close()
	sbRec, err := st.GetSandbox(ctx, s.ownerID, sb.ID)
	if err != nil {
		return listingSeed{}, err
	}
	done()
	done = func() {}
	start := time.Now()
	tmpl, err := st.GetConversation(ctx, s.ownerID, ids[0])
	if err != nil {
		return listingSeed{}, err
	}
	tasks, _, err := st.ListStartTasks(ctx, s.ownerID, conversation.TaskFilter{}, conversation.SortCreatedAt, paging.Query{Limit: 1})
	if err != nil || len(tasks) == 0 {
		return listingSeed{}, fmt.Errorf("template start task: %v", err)
	}
	tmplEvents, err := st.ConversationEvents(ctx, ids[0], 0)
	if err != nil {
		return listingSeed{}, err
	}
	base := tmpl.CreatedAt.Add(-time.Duration(n+1) * time.Second)
	for i := range n {
		at := base.Add(time.Duration(i) * time.Second)
		c := tmpl.Conversation
		c.ID, c.CreatedAt, c.UpdatedAt = id.New(), at, at
		c.Title = fmt.Sprintf("Conversation %d", i)
		t := tasks[0]
		t.ID, t.ConversationID, t.CreatedAt, t.UpdatedAt = id.New(), c.ID, at, at
		evs := make([]event.Event, 0, len(tmplEvents))
		for _, e := range tmplEvents {
			e.ID, e.ConversationID, e.Seq, e.Timestamp = id.Ordered(), c.ID, 0, at
			evs = append(evs, e)
		}
		if err := st.CreateConversation(ctx, c, t, evs, conversation.Claim{}); err != nil {
			return listingSeed{}, err
		}
		rec := sbRec
		rec.ID, rec.Status, rec.Detail, rec.CreatedAt, rec.UpdatedAt = id.New(), sandbox.StatusMissing, "the sandbox's processes are gone", at, at
		// No session key: one shared by every record would break the uniqueness of their
		// digests, which a server starting on the store computes for records that lack one.
		rec.SessionKeySealed, rec.SessionKeyHash = nil, nil
		if err := st.CreateSandbox(ctx, rec, 0); err != nil {
			return listingSeed{}, err
		}
	}
	for i := 0; i < n; i += 1000 {
		evs, err := fakeLog(long[0], min(1000, n-i))
		if err != nil {
			return listingSeed{}, err
		}
		if err := st.AppendEvents(ctx, evs); err != nil {
			return listingSeed{}, err
		}
	}
	return listingSeed{dataDir: dataDir, longConversation: long[0], took: time.Since(start)}, nil
}

// cpuPerRequest serves GET path n times in this goroutine, straight into a recorder (no
// network), and returns the CPU time per request that cpu counts (this process's, user and
// system, garbage collection included, with processCPU): what one request costs, whatever
// else the machine runs.
func cpuPerRequest(cpu func() (time.Duration, error), h http.Handler, path, key string, n int) (time.Duration, error) {
	return cpuPer(cpu, n, func() error {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("X-Session-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", path, rec.Code)
		}
		return nil
	})
}

// cpuPer runs f n times in this goroutine and returns the CPU time per run that cpu counts.
func cpuPer(cpu func() (time.Duration, error), n int, f func() error) (time.Duration, error) {
	before, err := cpu()
	if err != nil {
		return 0, err
	}
	for range n {
		if err := f(); err != nil {
			return 0, err
		}
	}
	after, err := cpu()
	if err != nil {
		return 0, err
	}
	return (after - before) / time.Duration(n), nil
}

// processCPU is the CPU time the process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
