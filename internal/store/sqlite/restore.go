package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/agentd/agentd/internal/store"
)

// Restore inserts the rows of a dump in one IMMEDIATE transaction of the writer, after
// checking, in it, that every table of dumpTables is empty. Rows keep every column they
// carry: ids, times (to the nanosecond), Seq values, rev counters; the derived columns are
// computed again. Explicit Seq values move the AUTOINCREMENT counters as they go, and the
// rows of store.SeqTable move them further when the source had handed out more.
func (s *Store) Restore(ctx context.Context, rows iter.Seq2[store.Row, error]) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := checkEmpty(ctx, tx); err != nil {
			return err
		}
		ins := &inserter{tx: tx, stmts: map[string]*sql.Stmt{}}
		defer ins.close()
		for r, err := range rows {
			if err != nil {
				return err
			}
			if err := ins.insert(ctx, r); err != nil {
				if ctx.Err() != nil {
					// A context that ends rolls the transaction back and closes its statements
					// meanwhile: the insert may fail with that before it sees the context.
					return ctx.Err()
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// checkEmpty fails with store.ErrNotEmpty, naming a table, when any table of the dump holds
// a row.
func checkEmpty(ctx context.Context, tx *sql.Tx) error {
	for _, t := range dumpTables {
		var some bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+`)`).Scan(&some); err != nil {
			return err
		}
		if some {
			return fmt.Errorf("%w: table %s has rows", store.ErrNotEmpty, t.name)
		}
	}
	return nil
}

// inserter inserts rows, with a statement prepared for each table.
type inserter struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (in *inserter) close() {
	for _, st := range in.stmts {
		st.Close()
	}
}

func (in *inserter) insert(ctx context.Context, r store.Row) error {
	if r.Table == store.SeqTable {
		return in.advance(ctx, r)
	}
	i := slices.IndexFunc(dumpTables, func(t dumpTable) bool { return t.name == r.Table })
	if i < 0 {
		return fmt.Errorf("a row of table %q, which this store does not have", r.Table)
	}
	t := dumpTables[i]
	args, err := rowArgs(t, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", t.name, keyOf(t.key, r), err)
	}
	st, ok := in.stmts[t.name]
	if !ok {
		names := make([]string, len(t.cols))
		for i, c := range t.cols {
			names[i] = c.name
		}
		st, err = in.tx.PrepareContext(ctx, `INSERT INTO `+t.name+` (`+strings.Join(names, ", ")+`) VALUES (`+placeholders(len(names))+`)`)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		in.stmts[t.name] = st
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("%s %s: %w", t.name, keyOf(t.key, r), err)
	}
	return nil
}

// rowArgs are the values of r for every column of t, in order: derived ones computed, the
// others converted from their store-neutral values. A column t does not have, or lacks and
// needs, is an error.
func rowArgs(t dumpTable, r store.Row) ([]any, error) {
	for _, name := range slices.Sorted(maps.Keys(r.Cols)) {
		if !slices.ContainsFunc(t.cols, func(c dumpCol) bool { return c.name == name && c.derive == nil }) {
			return nil, fmt.Errorf("column %s is not a column of this store's %s", name, t.name)
		}
	}
	args := make([]any, len(t.cols))
	for i, c := range t.cols {
		var err error
		v, ok := r.Cols[c.name]
		switch {
		case c.derive != nil:
			if v, err = c.derive(r); err != nil {
				return nil, fmt.Errorf("derive %s: %w", c.name, err)
			}
			args[i] = v
			continue
		case !ok && c.absent != nil:
			v = c.absent
		case !ok:
			return nil, fmt.Errorf("the row has no column %s", c.name)
		}
		if args[i], err = sqliteValue(c.kind, v); err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
	}
	return args, nil
}

// advance moves the counter of a table's AUTOINCREMENT column to at least the row's "last":
// the inserts of explicit Seq values have already moved it past every one of them.
func (in *inserter) advance(ctx context.Context, r store.Row) error {
	table, _ := r.Cols["table"].(string)
	last, ok := r.Cols["last"].(int64)
	if !ok || !slices.ContainsFunc(dumpTables, func(t dumpTable) bool { return t.name == table && t.seq != "" }) {
		return fmt.Errorf("a counter of %q at %v, which this store does not have", table, r.Cols["last"])
	}
	res, err := in.tx.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?`, last, table)
	if err != nil {
		return fmt.Errorf("advance the counter of %s: %w", table, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 || last == 0 {
		return err
	}
	// No row of the table was ever inserted here: its counter has no row yet.
	if _, err := in.tx.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`, table, last); err != nil {
		return fmt.Errorf("advance the counter of %s: %w", table, err)
	}
	return nil
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
