package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/app/apptest"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/wire"
)

// Helpers shared by the V0 conversation, validation, settings and robustness tests.

var v0HexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// v0Info is a conversation as GET /api/conversations/{id} shows it.
type v0Info struct {
	ConversationID      string   `json:"conversation_id"`
	Title               string   `json:"title"`
	Status              string   `json:"status"`
	RuntimeStatus       *string  `json:"runtime_status"`
	SelectedRepository  *string  `json:"selected_repository"`
	SelectedBranch      *string  `json:"selected_branch"`
	GitProvider         *string  `json:"git_provider"`
	Trigger             *string  `json:"trigger"`
	SessionAPIKey       *string  `json:"session_api_key"`
	PRNumber            []int    `json:"pr_number"`
	ConversationVersion string   `json:"conversation_version"`
	SubConversationIDs  []string `json:"sub_conversation_ids"`
}

// v0Page is GET /api/conversations.
type v0Page struct {
	Results    []v0Info `json:"results"`
	NextPageID *string  `json:"next_page_id"`
}

// v0Create creates a conversation through POST /api/conversations, checks the answer has
// exactly OpenHands' four keys with their creation values, and returns the id.
func (e *env) v0Create(key string, body any) string {
	e.t.Helper()
	data := e.must("POST", "/api/conversations", key, body, http.StatusOK, nil)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		e.t.Fatalf("decode %s: %v", data, err)
	}
	id, _ := got["conversation_id"].(string)
	want := map[string]any{"status": "ok", "conversation_id": id, "message": nil, "conversation_status": "STARTING"}
	if id == "" || !reflect.DeepEqual(got, want) {
		e.t.Fatalf("POST /api/conversations answered %s, want the keys status, conversation_id, message, conversation_status as %v", data, want)
	}
	return id
}

func (e *env) v0Get(key, id string) v0Info {
	e.t.Helper()
	var info v0Info
	e.must("GET", "/api/conversations/"+id, key, nil, http.StatusOK, &info)
	return info
}

// v0WaitStatus waits until the conversation reads status.
func (e *env) v0WaitStatus(key, id, status string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info := e.v0Get(key, id)
		if info.Status == status {
			return
		}
		if time.Now().After(deadline) {
			_, tasks := e.call("GET", "/api/v1/app-conversations/start-tasks/search", key, nil)
			e.t.Fatalf("timed out waiting for conversation %s to be %s; it reads %+v; start tasks %s", id, status, info, tasks)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// v0SandboxID waits until the conversation has a sandbox and returns its id (read through
// the V1 batch get, the only view that shows it).
func (e *env) v0SandboxID(key, convID string) string {
	e.t.Helper()
	var sid string
	e.eventually("sandbox of conversation "+convID, func() bool {
		var list []*struct {
			SandboxID string `json:"sandbox_id"`
		}
		e.must("GET", "/api/v1/app-conversations?ids="+convID, key, nil, http.StatusOK, &list)
		if len(list) != 1 || list[0] == nil {
			e.t.Fatalf("conversation %s not found through the V1 batch get", convID)
		}
		sid = list[0].SandboxID
		return sid != ""
	})
	return sid
}

// v0ConversationIDs lists every conversation id the caller sees through GET /api/conversations.
func (e *env) v0ConversationIDs(key string) []string {
	e.t.Helper()
	var ids []string
	page := ""
	for range 100 {
		var p v0Page
		e.must("GET", "/api/conversations?limit=100"+page, key, nil, http.StatusOK, &p)
		for _, c := range p.Results {
			ids = append(ids, c.ConversationID)
		}
		if p.NextPageID == nil {
			return ids
		}
		page = "&page_id=" + *p.NextPageID
	}
	e.t.Fatal("GET /api/conversations never ended")
	return nil
}

// sandboxIDList lists the caller's sandboxes through /api/v1/sandboxes/search.
func (e *env) sandboxIDList(key string) []string {
	e.t.Helper()
	var ids []string
	page := ""
	for range 100 {
		var p struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			NextPageID *string `json:"next_page_id"`
		}
		e.must("GET", "/api/v1/sandboxes/search?limit=100"+page, key, nil, http.StatusOK, &p)
		for _, s := range p.Items {
			ids = append(ids, s.ID)
		}
		if p.NextPageID == nil {
			return ids
		}
		page = "&page_id=" + *p.NextPageID
	}
	e.t.Fatal("GET /api/v1/sandboxes/search never ended")
	return nil
}

// userIDOf returns the id of the user the key belongs to.
func (e *env) userIDOf(key string) string {
	e.t.Helper()
	var me struct {
		ID string `json:"id"`
	}
	e.must("GET", "/api/v1/users/me", key, nil, http.StatusOK, &me)
	return me.ID
}

func (e *env) dbFilePath() string { return filepath.Join(e.cfg.DataDir, app.DBFile) }

// inspectStore opens the server's database beside the server, for reading what it stored.
func (e *env) inspectStore() *sqlite.Store {
	e.t.Helper()
	st, err := sqlite.Open(context.Background(), e.dbFilePath())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// inspectKeyring opens the keyring the server seals with.
func (e *env) inspectKeyring() *secret.Keyring {
	e.t.Helper()
	k, err := secret.LoadOrCreate(filepath.Join(e.cfg.DataDir, app.KeyringFile))
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// storedEvents returns a conversation's stored events in order.
func storedEvents(t *testing.T, st *sqlite.Store, ownerID, convID string) []event.Event {
	t.Helper()
	evs, _, err := st.SearchEvents(context.Background(), ownerID, event.Filter{ConversationID: convID}, false, paging.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// storedMessage is the part of a stored MessageEvent body the tests read.
type storedMessage struct {
	Kind       string `json:"kind"`
	Source     string `json:"source"`
	LLMMessage struct {
		Role    string           `json:"role"`
		Content []map[string]any `json:"content"`
	} `json:"llm_message"`
}

// storedFirstMessage checks that the conversation's first event is a user MessageEvent and
// returns its text and image URLs.
func storedFirstMessage(t *testing.T, st *sqlite.Store, ownerID, convID string) (text string, images []string) {
	t.Helper()
	evs := storedEvents(t, st, ownerID, convID)
	if len(evs) == 0 {
		t.Fatalf("conversation %s has no events, want the initial message first", convID)
	}
	ev := evs[0]
	if ev.Kind != event.KindMessage || ev.Source != event.SourceUser || ev.ConversationID != convID {
		t.Fatalf("first event is kind %q source %q conversation %q, want MessageEvent from user in %s", ev.Kind, ev.Source, ev.ConversationID, convID)
	}
	var m storedMessage
	if err := json.Unmarshal(ev.Body, &m); err != nil {
		t.Fatalf("decode event body %s: %v", ev.Body, err)
	}
	if m.Kind != event.KindMessage || m.Source != "user" || m.LLMMessage.Role != "user" {
		t.Fatalf("event body %s: want kind MessageEvent, source user, role user", ev.Body)
	}
	var texts []string
	for _, part := range m.LLMMessage.Content {
		switch part["type"] {
		case "text":
			s, _ := part["text"].(string)
			texts = append(texts, s)
		case "image":
			urls, _ := part["image_urls"].([]any)
			for _, u := range urls {
				s, _ := u.(string)
				images = append(images, s)
			}
		default:
			t.Fatalf("event body %s: unknown content part %v", ev.Body, part)
		}
	}
	return strings.Join(texts, "\n"), images
}

// assertProblems checks a 422 answer lists exactly want, in order.
func assertProblems(t *testing.T, status int, body []byte, want []wire.Problem) {
	t.Helper()
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422; body %s", status, body)
	}
	var got struct {
		Detail any `json:"detail"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	// Compare as JSON values, so that list indices compare equal whatever their Go type.
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var wantAny any
	if err := json.Unmarshal(wantJSON, &wantAny); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Detail, wantAny) {
		gotJSON, _ := json.Marshal(got.Detail)
		t.Fatalf("problems\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// problemAt builds an expected problem.
func problemAt(typ, msg string, loc ...any) wire.Problem {
	return wire.Problem{Type: typ, Loc: loc, Msg: msg}
}

// dbRows reads every row of every table of the server's database, as text, by table. Two equal
// results mean nothing was written in between (nothing in agentd rewrites a row unchanged, and
// dbRows first waits for the background work, start tasks and agent loops, to end). The
// expiries of the replica's heartbeat and of its leases, which it renews in the background
// whatever the requests do, are left out.
func (e *env) dbRows() map[string][]string {
	e.t.Helper()
	if e.app != nil {
		e.eventually("start tasks and agent loops to end", func() bool { return !e.app.Conversations.Busy() })
	}
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(e.dbFilePath())+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		e.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			e.t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	rows.Close()
	if len(tables) == 0 {
		e.t.Fatal("the database has no tables")
	}
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			e.t.Fatal(err)
		}
		out[table] = []string{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if cols[i] == "expires_at" && (table == "replicas" || table == "conversation_leases") {
					continue
				}
				if b, ok := v.([]byte); ok {
					v = hex.EncodeToString(b)
				}
				fmt.Fprintf(&b, "%s=%v;", cols[i], v)
			}
			out[table] = append(out[table], b.String())
		}
		if err := rows.Err(); err != nil {
			e.t.Fatal(err)
		}
		rows.Close()
		sort.Strings(out[table])
	}
	return out
}

// checkDBUnchanged fails unless the database holds exactly the rows of before.
func checkDBUnchanged(t *testing.T, before, after map[string][]string) {
	t.Helper()
	for table, rows := range after {
		if !reflect.DeepEqual(before[table], rows) {
			t.Errorf("table %s changed:\nbefore %q\n after %q", table, before[table], rows)
		}
	}
	if len(before) != len(after) {
		t.Errorf("tables changed: before %d, after %d", len(before), len(after))
	}
}

// dbFileBytes returns the database file and its write-ahead log.
func (e *env) dbFileBytes() []byte {
	e.t.Helper()
	var all []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := readOptional(e.dbFilePath() + suffix)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, b...)
	}
	if len(all) == 0 {
		e.t.Fatal("database files are empty")
	}
	return all
}

func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// syncLog collects the server's log; safe for concurrent writers.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restartLogged restarts the server on the same data directory with a debug-level logger
// writing to w. (newEnv's harness starts the app without a logger and its options only touch
// the configuration.)
func (e *env) restartLogged(w io.Writer) {
	e.t.Helper()
	e.stop()
	e.backend = e.newBackend()
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := apptest.Start(context.Background(), app.Options{Config: e.cfg, Backend: e.backend, Version: "test", Logger: log})
	if err != nil {
		e.t.Fatal(err)
	}
	e.app = a
	h := a.Handler()
	e.handler.Store(&h)
}

// bodyRecorder sends requests and keeps every response body, so that a test can check no
// secret ever came back.
type bodyRecorder struct {
	e      *env
	bodies []string
	// of is the recorder this one is a view of (in), which keeps the bodies; nil when it
	// keeps them itself.
	of *bodyRecorder
}

// in returns the view of the recorder for t, a subtest: its failures are t's, and what it
// records the recorder keeps.
func (r *bodyRecorder) in(t *testing.T) *bodyRecorder {
	return &bodyRecorder{e: r.e.in(t), of: r.keeper()}
}

// keeper is the recorder that keeps the bodies.
func (r *bodyRecorder) keeper() *bodyRecorder {
	if r.of != nil {
		return r.of
	}
	return r
}

// record keeps a body (or anything else a response carried).
func (r *bodyRecorder) record(body string) {
	k := r.keeper()
	k.bodies = append(k.bodies, body)
}

func (r *bodyRecorder) call(method, path, key string, body any) (int, []byte) {
	r.e.t.Helper()
	status, data := r.e.call(method, path, key, body)
	r.record(method + " " + path + ": " + string(data))
	return status, data
}

func (r *bodyRecorder) must(method, path, key string, body any, want int) []byte {
	r.e.t.Helper()
	status, data := r.call(method, path, key, body)
	if status != want {
		r.e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, data)
	}
	return data
}

// checkNone fails if any recorded body holds one of the secrets.
func (r *bodyRecorder) checkNone(t *testing.T, secrets []string) {
	t.Helper()
	bodies := r.keeper().bodies
	if len(bodies) == 0 {
		t.Fatal("no responses recorded")
	}
	for _, b := range bodies {
		for _, s := range secrets {
			if strings.Contains(b, s) {
				t.Errorf("a response holds the secret %q: %s", s, b)
			}
		}
	}
}

// checkDataDirLacks fails if any file of the data directory (the database, its write-ahead
// log, the sandboxes' files and logs) holds one of the secrets.
func (e *env) checkDataDirLacks(t *testing.T, secrets []string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(e.cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := readOptional(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q in plain text", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("the data directory has no files")
	}
	if e.cfg.Postgres() {
		return
	}
	if db := e.dbFileBytes(); len(db) == 0 {
		t.Fatal("no database bytes")
	}
}

// checkStoreLacks is checkDataDirLacks for a server on either store: on PostgreSQL, no value
// of any table, as a dump of the store reads it, holds one of the secrets either.
func (e *env) checkStoreLacks(t *testing.T, secrets []string) {
	t.Helper()
	e.checkDataDirLacks(t, secrets)
	if !e.cfg.Postgres() {
		return
	}
	pg, err := postgres.Open(t.Context(), e.cfg.Database, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rows := 0
	err = pg.Dump(t.Context(), func(r store.Row) error {
		rows++
		for col, v := range r.Cols {
			var b []byte
			switch v := v.(type) {
			case string:
				b = []byte(v)
			case []byte:
				b = v
			}
			for _, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s.%s holds the secret %q in plain text", r.Table, col, s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("the database has no rows")
	}
}

// v0Settle waits until no conversation of the caller is STARTING, so that no start task
// writes in the background while a test compares database snapshots.
func (e *env) v0Settle(key string) {
	e.t.Helper()
	e.eventually("start tasks to finish", func() bool {
		var p v0Page
		e.must("GET", "/api/conversations?limit=100", key, nil, http.StatusOK, &p)
		for _, c := range p.Results {
			if c.Status == "STARTING" {
				return false
			}
		}
		return true
	})
}
