package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentd/agentd/internal/store"
)

// Rows go to the server in batches of COPY FROM (which writes the values given for an
// identity column, as INSERT's OVERRIDING SYSTEM VALUE does): a batch ends at a change of
// table or when it holds batchRows rows or about batchBytes bytes of text and binary values.
const (
	batchRows  = 1000
	batchBytes = 4 << 20
)

// Restore writes the rows of a dump in one transaction that first locks every table of the
// dump against writers (SHARE ROW EXCLUSIVE: readers go on) and checks that all are empty.
// Rows keep every column they carry (ids, Seq values, times to the microsecond, which is what
// timestamptz keeps, and the listing counters, rev); title_fold and body_fold are computed
// again. Text must be UTF-8 without NUL characters, as
// PostgreSQL's text takes it: a row that has other text fails the restore, naming the row.
// Once the rows are in, the identity sequences of events and pending messages move past
// every Seq copied, and to at least what the source's had handed out, and the tables are
// analyzed: tables filled in bulk have no statistics until autovacuum comes by (up to a
// minute later), and without them the planner reads a listing's every row (a page of 100 of
// 1,000 conversations took 50 ms instead of under one). Once the transaction has committed,
// the tables are vacuumed.
func (s *Store) Restore(ctx context.Context, rows iter.Seq2[store.Row, error]) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		// The commit waits for its WAL to be flushed whatever the server's setting: the copy
		// is durable when Restore returns, and VACUUM (below) marks a page visible to all
		// only once the commits of its rows are flushed.
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		names := tableNames()
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(names, ", ")+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		if err := checkEmpty(ctx, tx); err != nil {
			return err
		}
		b := &batch{tx: tx, last: map[string]int64{}}
		for r, err := range rows {
			if err != nil {
				return err
			}
			if err := b.add(ctx, r); err != nil {
				return err
			}
		}
		if err := b.flush(ctx); err != nil {
			return err
		}
		if err := b.advance(ctx); err != nil {
			return err
		}
		// Inside the transaction, so that the statistics come with the rows.
		if _, err := tx.Exec(ctx, `ANALYZE `+strings.Join(names, ", ")); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	// Outside it, as VACUUM runs only there: it marks the pages it finds visible to every
	// transaction, so that a listing's versions are read from the owner's index alone (an
	// index-only scan looks a row up in the table on a page not so marked), where autovacuum
	// would come by only once a table had been written a fifth more, and never for one of
	// under about a thousand rows.
	if _, err := s.pool.Exec(ctx, `VACUUM `+strings.Join(tableNames(), ", ")); err != nil {
		return fmt.Errorf("restore: vacuum: %w", err)
	}
	return nil
}

// tableNames are the names of dumpTables, in their order.
func tableNames() []string {
	names := make([]string, len(dumpTables))
	for i, t := range dumpTables {
		names[i] = t.name
	}
	return names
}

// checkEmpty fails with store.ErrNotEmpty, naming a table, when any table of the dump holds
// a row.
func checkEmpty(ctx context.Context, tx pgx.Tx) error {
	for _, t := range dumpTables {
		var some bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+`)`).Scan(&some); err != nil {
			return err
		}
		if some {
			return fmt.Errorf("%w: table %s has rows", store.ErrNotEmpty, t.name)
		}
	}
	return nil
}

// batch gathers the rows of one table for a COPY.
type batch struct {
	tx    pgx.Tx
	table *dumpTable
	rows  [][]any
	keys  []string // the rows' keys, for errors
	bytes int
	// last is the greatest Seq that each table with a sequence must count from: the rows'
	// and the store.SeqTable rows'.
	last map[string]int64
}

func (b *batch) add(ctx context.Context, r store.Row) error {
	if r.Table == store.SeqTable {
		table, _ := r.Cols["table"].(string)
		last, ok := r.Cols["last"].(int64)
		if !ok || !slices.ContainsFunc(dumpTables, func(t dumpTable) bool { return t.name == table && t.seq != "" }) {
			return fmt.Errorf("a counter of %q at %v, which this store does not have", table, r.Cols["last"])
		}
		b.last[table] = max(b.last[table], last)
		return nil
	}
	if b.table == nil || b.table.name != r.Table || len(b.rows) >= batchRows || b.bytes >= batchBytes {
		if err := b.flush(ctx); err != nil {
			return err
		}
		i := slices.IndexFunc(dumpTables, func(t dumpTable) bool { return t.name == r.Table })
		if i < 0 {
			return fmt.Errorf("a row of table %q, which this store does not have", r.Table)
		}
		b.table = &dumpTables[i]
	}
	t := b.table
	args, size, err := rowArgs(*t, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", t.name, keyOf(t.key, r), err)
	}
	if t.seq != "" {
		if seq, ok := r.Cols[t.seq].(int64); ok {
			b.last[t.name] = max(b.last[t.name], seq)
		}
	}
	b.rows = append(b.rows, args)
	b.keys = append(b.keys, keyOf(t.key, r))
	b.bytes += size
	return nil
}

// flush copies the rows gathered.
func (b *batch) flush(ctx context.Context) error {
	if len(b.rows) == 0 {
		return nil
	}
	t := b.table
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	if _, err := b.tx.CopyFrom(ctx, pgx.Identifier{t.name}, names, pgx.CopyFromRows(b.rows)); err != nil {
		return fmt.Errorf("%s, one of the rows %s to %s: %w", t.name, b.keys[0], b.keys[len(b.keys)-1], withWhere(err))
	}
	b.rows, b.keys, b.bytes = b.rows[:0], b.keys[:0], 0
	return nil
}

// advance moves each identity sequence to the greatest Seq it must count from, and never
// back: the next Seq drawn is greater than every one copied.
func (b *batch) advance(ctx context.Context) error {
	for _, t := range dumpTables {
		if t.seq == "" {
			continue
		}
		cur, err := sequenceLast(ctx, b.tx, t)
		if err != nil {
			return fmt.Errorf("read the sequence of %s: %w", t.name, err)
		}
		if last := b.last[t.name]; last > cur {
			if _, err := b.tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2)::regclass, $3)`, t.name, t.seq, last); err != nil {
				return fmt.Errorf("advance the sequence of %s: %w", t.name, err)
			}
		}
	}
	return nil
}

// rowArgs are the values of r for every column of t, in order, and about how many bytes
// they hold: derived ones computed, the others converted from their store-neutral values. A
// column that t neither has nor drops (foreign), or that r lacks, is an error.
func rowArgs(t dumpTable, r store.Row) ([]any, int, error) {
	for _, name := range slices.Sorted(maps.Keys(r.Cols)) {
		if _, ok := t.foreign[name]; ok {
			continue
		}
		if !slices.ContainsFunc(t.cols, func(c dumpCol) bool { return c.name == name && c.derive == nil }) {
			return nil, 0, fmt.Errorf("column %s is not a column of this store's %s", name, t.name)
		}
	}
	args := make([]any, len(t.cols))
	size := 0
	for i, c := range t.cols {
		var err error
		if c.derive != nil {
			if args[i], err = c.derive(r); err != nil {
				return nil, 0, fmt.Errorf("derive %s: %w", c.name, err)
			}
			continue
		}
		v, ok := r.Cols[c.name]
		if !ok {
			return nil, 0, fmt.Errorf("the row has no column %s", c.name)
		}
		if args[i], err = pgValue(c.kind, v); err != nil {
			return nil, 0, fmt.Errorf("column %s: %w", c.name, err)
		}
		switch v := v.(type) {
		case string:
			size += len(v)
		case []byte:
			size += len(v)
		}
	}
	return args, size, nil
}

// pgValue checks that the store-neutral value v suits a column of kind k and returns what
// pgx writes for it.
func pgValue(k colKind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kindText:
		if v, ok := v.(string); ok {
			if !utf8.ValidString(v) {
				return nil, errors.New("the text is not UTF-8, which PostgreSQL's text requires")
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, errors.New("the text holds a NUL character, which PostgreSQL's text refuses")
			}
			return v, nil
		}
	case kindBlob:
		if v, ok := v.([]byte); ok {
			return v, nil
		}
	case kindInt:
		if v, ok := v.(int64); ok {
			return v, nil
		}
	case kindBool:
		if v, ok := v.(bool); ok {
			return v, nil
		}
	case kindTime:
		if v, ok := v.(time.Time); ok {
			if err := checkTimes(v); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("%T is not a value of this column", v)
}

// keyOf names a row by its primary key, for errors: "(id=conv-1)".
func keyOf(key []string, r store.Row) string {
	parts := make([]string, 0, len(key))
	for _, k := range key {
		v := r.Cols[k]
		if b, ok := v.([]byte); ok {
			v = fmt.Sprintf("%x", b)
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// withWhere adds to a server's error the place it names ("COPY events, line 3, column
// body"), which the error's text leaves out.
func withWhere(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Where != "" {
		return fmt.Errorf("%w (%s)", err, pe.Where)
	}
	return err
}
