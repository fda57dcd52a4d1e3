package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Dumps and restores: the store-neutral copy of everything a store holds, by which a data
// directory's SQLite store moves to PostgreSQL (agentd migrate), and either kind of store
// copies to another of either kind.
//
// A dump is a stream of rows, table by table. A Row names its table and carries its columns as
// store-neutral values, whatever each store keeps them as:
//
//   - string for text, JSON documents included, byte for byte as stored;
//   - []byte for binary values (hashes, sealed secrets, a tool's output as it came);
//   - int64 for integers (Seq values and counters included);
//   - bool for flags;
//   - time.Time, in UTC, for times (the zero time.Time where a store keeps the zero time);
//   - nil for NULL.
//
// Sealed values are copied as the bytes they are, never opened: the copy opens only with the
// keyring that sealed the original.
//
// Tables and columns are named as the stores' schemas name them. A store may keep a column
// that another does not (the SQLite store's listing counters, rev) or compute one from the
// others (a search column such as title_fold): each store's Restore says which columns it
// accepts without keeping, and recomputes the columns it derives. Anything else it does not
// know is an error, so that a column added to one store's schema and not to the other's
// fails the copy instead of being dropped.

// Row is one row of a table, in store-neutral values (see above).
type Row struct {
	// Table is the table's name in the store's schema, or SeqTable.
	Table string
	// Cols are the row's columns by name.
	Cols map[string]any
}

// SeqTable is the pseudo-table of a dump that carries the counters from which a store draws
// Seq values (of events and of pending messages): one row per counter, with "table" (string:
// the table whose "seq" column it numbers) and "last" (int64: the greatest number it has
// handed out, which may exceed every Seq still stored once rows were deleted). A restore
// moves the target's counter to at least "last" and past every Seq it copied, so that a Seq is
// never handed out twice and later ones keep increasing. The rows of SeqTable come after every
// table's.
const SeqTable = "_seq"

// Dumper is the optional ability of a store to read every row it holds.
//
// Dump calls fn with each row of each of its tables, and then with the rows of SeqTable, in
// an order that Restore can insert in: a row comes after the rows it refers to (tables in
// the order of their foreign keys), and within a table rows come in the order of their
// primary key (events in Seq order). It reads one consistent snapshot of the store, in one
// read transaction, so writers may go on meanwhile without tearing the dump. It stops at
// fn's first error and returns it. The bookkeeping of the schema itself (its migrations) is
// not part of a dump: the target store has its own.
//
// fn owns the values of the rows it is given.
type Dumper interface {
	Dump(ctx context.Context, fn func(Row) error) error
}

// Restorer is the optional ability of a store to take in a dump.
//
// Restore inserts every row of rows, in the order given, in ONE transaction: either all of
// them are there afterwards or, whatever failed (a row that breaks a constraint, a value of a
// wrong type, an error that rows yields, ctx ending), none is. It refuses, with ErrNotEmpty
// and changing nothing, a store that is not empty: a store is empty when every table that a
// dump of it would cover has no row. What a store's migrations write (the version of its
// schema) does not count, and neither do its Seq counters; a store that a server has already
// run on holds at least its first admin, and is not empty. The target's Seq counters end past
// every Seq copied and at least at the SeqTable rows' "last".
//
// Times are kept at the target's precision: the PostgreSQL store's is the microsecond, so
// that a copy from SQLite (nanoseconds) there drops what is below it.
type Restorer interface {
	Restore(ctx context.Context, rows iter.Seq2[Row, error]) error
}

// ErrNotEmpty: the store that a restore was to fill already holds data.
var ErrNotEmpty = errors.New("the target store is not empty")

// TableRows is how many rows of one table a copy copied.
type TableRows struct {
	Table string
	Rows  int
}

// errStopped ends a dump whose restore stopped reading it.
var errStopped = errors.New("the restore stopped reading the dump")

// Copy restores into dst everything src holds, as src.Dump reads it and dst.Restore writes
// it (one transaction: all or nothing, into an empty dst only), and returns how many rows of
// each table it copied, in the order of the dump, SeqTable left out.
func Copy(ctx context.Context, dst Restorer, src Dumper) ([]TableRows, error) {
	var tally []TableRows
	rows := func(yield func(Row, error) bool) {
		err := src.Dump(ctx, func(r Row) error {
			if r.Table != SeqTable {
				if n := len(tally); n == 0 || tally[n-1].Table != r.Table {
					tally = append(tally, TableRows{Table: r.Table})
				}
				tally[len(tally)-1].Rows++
			}
			if !yield(r, nil) {
				return errStopped
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopped) {
			yield(Row{}, fmt.Errorf("dump: %w", err))
		}
	}
	if err := dst.Restore(ctx, rows); err != nil {
		return nil, err
	}
	return tally, nil
}
