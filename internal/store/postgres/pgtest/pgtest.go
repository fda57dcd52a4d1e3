// Package pgtest gives tests a PostgreSQL server: a throwaway one that a test binary starts for
// itself, and a fresh database on it for each test.
//
// A test binary calls Main (or Run) from its TestMain, and each test that needs a database
// calls Database:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Database(t) // postgres://... of a new, empty database
//		...
//	}
//
// The first call of Database starts a server (a test binary whose tests ask for no database,
// say under -run, starts none) in a temporary directory, listening on 127.0.0.1 only (and on
// a unix socket inside that directory), with initdb and pg_ctl of the newest PostgreSQL
// installed under /usr/lib/postgresql/*/bin, or else found on PATH. It runs them as the
// postgres user when the tests run as root, since PostgreSQL refuses to run as root.
// Durability is off (fsync, synchronous_commit, full_page_writes): nothing of it outlives the
// tests. The server's default collation is ICU's en-US, not byte order, so that a query
// relying on the database's locale for its order instead of saying COLLATE "C" shows up in
// the tests. After the tests, pass or fail, Main stops the server it started (pg_ctl -m fast)
// and removes the directory.
//
// With the environment variable AGENTD_TEST_POSTGRES set to a server's URL (for example
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), Main starts nothing and the
// tests use that server instead; its user must be allowed to create databases. The
// databases made there are dropped when their tests end.
//
// A program that is not a test binary (the benchmark), or a test whose clients are elsewhere
// (the pods of a test cluster, in a network namespace of its own), starts a server of the
// same kind where it asks with StartServer, makes its databases with CreateDatabase, and
// stops it itself.
//
// When PostgreSQL is not installed or its server does not start, Database skips the test and
// says why; with the environment variable CI set, it fails the test instead, because a CI
// machine must have PostgreSQL and a skip there would hide a store that no longer works.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable that points the tests at an existing server.
const EnvURL = "AGENTD_TEST_POSTGRES"

// The server of this test binary: Main sets mainCalled (and adminURL, from EnvURL), and
// the first Database starts the throwaway server (startOnce) and sets the rest.
var (
	mainCalled bool
	startOnce  sync.Once
	// srv is the throwaway server once started; nil when there is none to stop.
	srv *server
	// adminURL reaches the server as a user that may create databases; empty when the
	// server is unavailable.
	adminURL string
	// unavailable says why there is no server.
	unavailable error
	// dropAfter: drop each test's database when the test ends (on a server the tests do
	// not own; a throwaway one goes whole).
	dropAfter bool
	// databases numbers the databases made, for their names.
	databases atomic.Int64
)

// Main runs the tests of m with a PostgreSQL server, as the package comment describes, and
// exits with their result. It never returns.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that does more than run the tests: it runs them, stops the
// server if one started, and returns their exit code.
func Run(m *testing.M) int {
	mainCalled = true
	if u := os.Getenv(EnvURL); u != "" {
		adminURL, dropAfter = u, true
	}
	code := m.Run()
	if srv == nil {
		return code
	}
	if err := srv.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// startServer starts the throwaway server, once, unless EnvURL names a server.
func startServer() {
	startOnce.Do(func() {
		if adminURL != "" {
			return
		}
		s, err := start(context.Background(), "", "")
		if err != nil {
			unavailable = err
			return
		}
		srv, adminURL = s, s.url
	})
}

// Database creates an empty database on the tests' server and returns its URL. The test is
// skipped (failed under CI) when there is no server.
func Database(t testing.TB) string {
	t.Helper()
	if !mainCalled {
		t.Fatal("pgtest: Database needs pgtest.Main to run from the test binary's TestMain")
	}
	startServer()
	if unavailable != nil {
		Unavailable(t, "PostgreSQL is not available: %v", unavailable)
	}
	name := fmt.Sprintf("agentd_test_%d_%d_%s", os.Getpid(), databases.Add(1), sanitize(t.Name()))
	ctx := context.WithoutCancel(t.Context())
	u, err := createDatabase(ctx, adminURL, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if dropAfter {
		t.Cleanup(func() {
			if err := admin(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{u.name}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Errorf("pgtest: drop database %s: %v", u.name, err)
			}
		})
	}
	return u.url
}

// CreateDatabase creates an empty database named name (cut to PostgreSQL's 63 bytes) on the
// server that serverURL reaches, as a user that may create databases, and returns its URL.
func CreateDatabase(ctx context.Context, serverURL, name string) (string, error) {
	d, err := createDatabase(ctx, serverURL, name)
	return d.url, err
}

// database is a database made by createDatabase.
type database struct{ name, url string }

func createDatabase(ctx context.Context, serverURL, name string) (database, error) {
	name = name[:min(len(name), 63)] // PostgreSQL's limit on identifiers
	u, err := url.Parse(serverURL)
	if err != nil {
		return database{}, fmt.Errorf("server URL: %w", err)
	}
	if err := admin(ctx, serverURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return database{}, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return database{name: name, url: u.String()}, nil
}

// Unavailable skips t because the machine lacks PostgreSQL, or fails it when CI is set.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this fails instead of skipping)", msg)
	}
	t.Skip(msg)
}

// ServerOptions configure StartServer.
type ServerOptions struct {
	// Netns is the network namespace (a name in /run/netns) the server runs in, such as a
	// test cluster's, so that what runs there reaches it at Listen; empty: this process's.
	Netns string
	// Listen is the address it listens on in that namespace; empty means 127.0.0.1. On any
	// other address it trusts every client, as on loopback: it is a throwaway server for
	// tests, and its clients are theirs.
	Listen string
}

// Server is a throwaway server that its caller started for itself with StartServer.
type Server struct{ s *server }

// StartServer starts a throwaway server like the tests' (see the package comment), but one
// of the caller's, where opts say: a benchmark's, or a test's whose clients are elsewhere.
// It ignores EnvURL. The caller must call Stop, also when what it does with the server
// fails; on error nothing is left running. It fails when PostgreSQL is not installed or does
// not start (a test calls Unavailable then).
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	s, err := start(ctx, opts.Netns, opts.Listen)
	if err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// URL reaches the server at its listen address as the postgres user, who may create
// databases (CreateDatabase), on the database postgres.
func (s *Server) URL() string { return s.s.url }

// SocketURL reaches it through its unix socket, which any network namespace of the machine
// reaches.
func (s *Server) SocketURL() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(s.s.dir), s.s.port)
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() error { return s.s.stop() }

// admin runs one statement on the maintenance database that serverURL reaches, on a
// connection of its own (CREATE and DROP DATABASE cannot run inside a transaction block).
func admin(ctx context.Context, serverURL, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// sanitize makes a test's name fit a database name.
func sanitize(name string) string {
	return strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(name), "_"), "_")
}
