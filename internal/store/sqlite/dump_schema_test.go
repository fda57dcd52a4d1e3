package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notDumped are the tables a dump leaves out, and why: the only one is the bookkeeping of
// the migrations, which the target store keeps for its own schema.
var notDumped = map[string]string{
	"schema_migrations": "the versions of the schema applied: the target has its own",
}

// coverage is what dumpTables says a dump covers, by table and column: the columns it
// carries, those a restore derives, and sqlite_sequence, whose counters it carries as rows
// of store.SeqTable.
func coverage() map[string][]string {
	cov := map[string][]string{}
	for _, t := range dumpTables {
		for _, c := range t.cols {
			cov[t.name] = append(cov[t.name], c.name)
		}
		if t.seq != "" {
			cov["sqlite_sequence"] = []string{"name", "seq"}
		}
	}
	return cov
}

// schemaGaps reads the schema of db and reports every column of every table that the dump
// neither carries nor derives, and every column that dumpTables names and the schema lacks.
func schemaGaps(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' ORDER BY m.name, p.cid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	schema := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		schema[table] = append(schema[table], col)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	cov := coverage()
	var gaps []string
	for table, cols := range schema {
		if _, ok := notDumped[table]; ok {
			continue
		}
		for _, c := range cols {
			if !slices.Contains(cov[table], c) {
				gaps = append(gaps, fmt.Sprintf("%s.%s is in the schema and not in the dump: add it to dumpTables (dump.go), as a column or, if a restore can compute it, a derived one", table, c))
			}
		}
	}
	for table, cols := range cov {
		for _, c := range cols {
			if !slices.Contains(schema[table], c) {
				gaps = append(gaps, fmt.Sprintf("%s.%s is in dumpTables and not in the schema", table, c))
			}
		}
	}
	slices.Sort(gaps)
	return gaps, nil
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDumpCoversSchema: the dump carries, or derives, every column of every table of the
// migrated schema. A migration that adds a column or a table fails here until dumpTables
// says how it is copied.
func TestDumpCoversSchema(t *testing.T) {
	s := openTemp(t)
	gaps, err := schemaGaps(t.Context(), s.r.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) > 0 {
		t.Errorf("the dump does not cover the schema:\n%s", strings.Join(gaps, "\n"))
	}
	for _, tb := range dumpTables {
		for _, c := range tb.cols {
			if c.derive != nil && c.why == "" {
				t.Errorf("%s.%s is derived and does not say why", tb.name, c.name)
			}
		}
	}
}

// TestDumpCoversSchemaCatches: a column or a table that a migration adds and dumpTables
// does not name is reported, so that the test above cannot pass for want of looking.
func TestDumpCoversSchemaCatches(t *testing.T) {
	s := openTemp(t)
	ctx := t.Context()
	for _, stmt := range []string{
		`ALTER TABLE sandboxes ADD COLUMN added_later TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE added_later (id TEXT PRIMARY KEY, note TEXT NOT NULL) STRICT`,
	} {
		if _, err := s.w.DB.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	gaps, err := schemaGaps(ctx, s.r.DB)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range gaps {
		got = append(got, strings.Fields(g)[0])
	}
	want := []string{"added_later.id", "added_later.note", "sandboxes.added_later"}
	if !slices.Equal(got, want) {
		t.Errorf("gaps reported: %q, want %q", got, want)
	}
}
