package sqlite

import (
	"context"
	"database/sql/driver"
	"strings"
	"time"
)

// QueryObserver is told how long each statement took, for the server's metrics. pool is
// "read" or "write"; statement is the statement's first keyword in lower case ("select",
// "insert", "update", "delete", "begin", "commit", "rollback", …). A query's time runs from
// its start until its rows are closed, so reading the rows counts. ObserveQuery is called
// from many goroutines at once and must not block.
type QueryObserver interface {
	ObserveQuery(pool, statement string, d time.Duration, failed bool)
}

type noObserver struct{}

func (noObserver) ObserveQuery(string, string, time.Duration, bool) {}

// Pools of a QueryObserver.
const (
	PoolRead  = "read"
	PoolWrite = "write"
)

// observedConnector times every statement of the connections it opens. The connections
// keep every optional interface of the driver's that database/sql uses, so nothing but the
// timing changes.
type observedConnector struct {
	driver.Connector
	pool string
	obs  QueryObserver
	// trace, when set, is told every statement's text and arguments (tests only).
	trace func(query string, args []driver.NamedValue)
}

func (c observedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &observedConn{Conn: conn, pool: c.pool, obs: c.obs, trace: c.trace}, nil
}

// The driver's connection implements these; database/sql looks for them.
type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type observedConn struct {
	driver.Conn
	pool  string
	obs   QueryObserver
	trace func(query string, args []driver.NamedValue)
}

func (c *observedConn) full() fullConn { return c.Conn.(fullConn) }

func (c *observedConn) observe(statement string, start time.Time, err error) {
	c.obs.ObserveQuery(c.pool, statement, time.Since(start), err != nil && err != driver.ErrSkip)
}

func (c *observedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	start := time.Now()
	tx, err := c.full().BeginTx(ctx, opts)
	c.observe("begin", start, err)
	if err != nil {
		return nil, err
	}
	return observedTx{Tx: tx, c: c}, nil
}

func (c *observedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.full().PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &observedStmt{Stmt: st, c: c, query: query, statement: statementOf(query)}, nil
}

func (c *observedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	start := time.Now()
	res, err := c.full().ExecContext(ctx, query, args)
	c.observe(statementOf(query), start, err)
	return res, err
}

func (c *observedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.trace != nil {
		c.trace(query, args)
	}
	start := time.Now()
	rows, err := c.full().QueryContext(ctx, query, args)
	if err != nil {
		c.observe(statementOf(query), start, err)
		return nil, err
	}
	statement := statementOf(query)
	return &observedRows{Rows: rows, done: func(err error) { c.observe(statement, start, err) }}, nil
}

func (c *observedConn) Ping(ctx context.Context) error         { return c.full().Ping(ctx) }
func (c *observedConn) ResetSession(ctx context.Context) error { return c.full().ResetSession(ctx) }
func (c *observedConn) IsValid() bool                          { return c.full().IsValid() }

type observedTx struct {
	driver.Tx
	c *observedConn
}

func (t observedTx) Commit() error   { return t.end("commit", t.Tx.Commit) }
func (t observedTx) Rollback() error { return t.end("rollback", t.Tx.Rollback) }

func (t observedTx) end(statement string, fn func() error) error {
	start := time.Now()
	err := fn()
	t.c.observe(statement, start, err)
	return err
}

type observedStmt struct {
	driver.Stmt
	c                *observedConn
	query, statement string
}

func (s *observedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	start := time.Now()
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	s.c.observe(s.statement, start, err)
	return res, err
}

func (s *observedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if s.c.trace != nil {
		s.c.trace(s.query, args)
	}
	start := time.Now()
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		s.c.observe(s.statement, start, err)
		return nil, err
	}
	return &observedRows{Rows: rows, done: func(err error) { s.c.observe(s.statement, start, err) }}, nil
}

// observedRows reports its query when it is closed.
type observedRows struct {
	driver.Rows
	done   func(err error)
	closed bool
}

func (r *observedRows) Close() error {
	err := r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.done(err)
	}
	return err
}

// statements are the keywords statementOf knows.
var statements = []string{"select", "insert", "update", "delete", "with", "pragma", "create",
	"alter", "drop", "replace", "begin", "commit", "rollback", "vacuum", "analyze"}

// statementOf is the first keyword of query, in lower case, or "other".
func statementOf(query string) string {
	q := strings.TrimLeft(query, " \t\r\n(")
	end := strings.IndexAny(q, " \t\r\n(;")
	if end < 0 {
		end = len(q)
	}
	for _, w := range statements {
		if strings.EqualFold(q[:end], w) {
			return w
		}
	}
	return "other"
}
