package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/store"
)

// The dump of this store (store.Dumper) and its restore (store.Restorer, restore.go) both
// follow dumpTables: every table of the schema, every column of each, and how each column's
// SQLite value reads as a store-neutral one. A test reads the schema and fails on a column
// that dumpTables leaves out, so that a migration that adds one must say how it is copied.

var (
	_ store.Dumper   = (*Store)(nil)
	_ store.Restorer = (*Store)(nil)
)

// colKind is how a column's SQLite value reads as a store-neutral value (see store.Row).
type colKind int

const (
	kindText  colKind = iota // TEXT: string (JSON documents too)
	kindBytes                // TEXT kept as bytes, a tool's output as it came: []byte
	kindBlob                 // BLOB: []byte
	kindInt                  // INTEGER: int64
	kindBool                 // INTEGER 0 or 1: bool
	kindTime                 // INTEGER unix nanoseconds (codec.go): time.Time
)

// dumpCol is a column of a dumped table.
type dumpCol struct {
	name string
	kind colKind
	// derive, when set, makes the column derived: a dump leaves it out and a restore computes
	// it from the row's other columns. why says what it is, for readers of the schema test.
	derive func(store.Row) (any, error)
	why    string
	// absent is what a restore stores when the row lacks the column because its store does not
	// keep it; nil makes the column required.
	absent any
}

// dumpTable is a table of the dump.
type dumpTable struct {
	name string
	// key is the table's primary key: the order of its rows in a dump, and what names a row
	// in an error.
	key  []string
	cols []dumpCol
	// seq names the table's AUTOINCREMENT column, whose counter the dump carries as a row
	// of store.SeqTable; "" when it has none.
	seq string
}

// Constructors of columns, so that dumpTables reads as the schema does.
func text(name string) dumpCol  { return dumpCol{name: name, kind: kindText} }
func blob(name string) dumpCol  { return dumpCol{name: name, kind: kindBlob} }
func integer(n string) dumpCol  { return dumpCol{name: n, kind: kindInt} }
func boolean(n string) dumpCol  { return dumpCol{name: n, kind: kindBool} }
func timeCol(n string) dumpCol  { return dumpCol{name: n, kind: kindTime} }
func bytesCol(n string) dumpCol { return dumpCol{name: n, kind: kindBytes} }

// rev is a listing counter of migrations 0012 and 0013: the listing cache tells a row it
// read from one that changed since by it alone. A copy keeps it (the PostgreSQL store keeps
// one too); a restore of a dump from a store that keeps none starts it at 0, as any value is
// new to an empty cache.
var rev = dumpCol{name: "rev", kind: kindInt, absent: int64(0)}

// dumpTables are the tables in the order of the dump: a table comes after those its rows
// refer to, and sandboxes and start tasks come before conversations, so that restoring them
// fires no trigger of migration 0013 on a conversation (it would change the rev it copies).
var dumpTables = []dumpTable{
	{name: "users", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("name"), boolean("is_admin"), timeCol("created_at")}},
	{name: "api_keys", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("user_id"), text("name"), text("prefix"), blob("hash"),
		timeCol("created_at"), timeCol("expires_at")}},
	{name: "web_sessions", key: []string{"hash"}, cols: []dumpCol{
		blob("hash"), text("key_id"), text("user_id"), timeCol("created_at"), timeCol("expires_at")}},
	{name: "settings", key: []string{"user_id"}, cols: []dumpCol{
		text("user_id"), text("values_json"), text("secrets"), timeCol("updated_at")}},
	{name: "provider_tokens", key: []string{"user_id", "provider"}, cols: []dumpCol{
		text("user_id"), text("provider"), blob("token_sealed"), text("host"), text("external_user_id"),
		timeCol("updated_at")}},
	{name: "custom_secrets", key: []string{"user_id", "name"}, cols: []dumpCol{
		text("user_id"), text("name"), text("description"), blob("value_sealed"),
		timeCol("created_at"), timeCol("updated_at")}},
	{name: "user_skills", key: []string{"user_id", "name"}, cols: []dumpCol{
		text("user_id"), text("name"), text("triggers"), text("description"), text("content"),
		timeCol("created_at"), timeCol("updated_at")}},
	{name: "sandbox_specs", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("description"), text("command"), text("initial_env"), text("working_dir"),
		text("image"), text("rootfs"), text("network"), text("limits"), timeCol("created_at")}},
	{name: "sandboxes", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("owner_id"), text("spec_id"), text("backend"), text("node"), text("status"), text("detail"),
		blob("session_key_sealed"), blob("session_key_hash"), text("instance"),
		timeCol("created_at"), timeCol("updated_at"), rev, timeCol("active_at")}},
	{name: "start_tasks", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("owner_id"), text("conversation_id"), text("status"), text("detail"),
		text("sandbox_id"), text("agent_server_url"), text("request"),
		timeCol("created_at"), timeCol("updated_at"), rev}},
	{name: "conversations", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("owner_id"), text("sandbox_id"), text("version"), text("title"),
		{name: "title_fold", derive: deriveFold("title"), why: "the title folded to lower case, which TitleContains searches"},
		text("selected_repository"), text("selected_branch"), text("git_provider"), text("trigger_name"),
		text("pr_numbers"), text("llm_model"), text("metrics"), text("parent_id"), blob("request_sealed"),
		text("secret_names"), blob("secrets_sealed"), boolean("public"), text("tags"), boolean("title_by_user"),
		text("execution_status"), text("confirmation_policy"), text("work_dir"), text("waiting_for_node"), timeCol("created_at"), timeCol("updated_at"), rev}},
	{name: "conversation_skills", key: []string{"conversation_id", "position"}, cols: []dumpCol{
		text("conversation_id"), integer("position"), text("name"), text("type"), text("triggers"),
		text("description"), text("content"), text("source"), text("mcp_servers")}},
	{name: "pending_messages", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		integer("seq"), text("id"), text("conversation_id"), text("role"), text("content"), timeCol("created_at")}},
	{name: "events", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		integer("seq"), text("id"), text("conversation_id"), text("owner_id"), text("kind"), text("source"),
		timeCol("ts"), text("body"), bytesCol("llm_text")}},
	{name: "webhooks", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("owner_id"), text("url"), text("kinds"), text("conversation_id"), text("description"),
		blob("secret_sealed"), timeCol("created_at")}},
	{name: "webhook_deliveries", key: []string{"id"}, cols: []dumpCol{
		text("id"), text("webhook_id"), text("owner_id"), text("kind"), text("payload"), text("status"),
		integer("attempts"), integer("response_code"), text("error"), timeCol("created_at"),
		timeCol("updated_at"), timeCol("next_attempt_at"), timeCol("retry_until"), text("endpoint"),
		timeCol("claimed_until")}},
	{name: "webhook_endpoints", key: []string{"owner_id", "endpoint"}, cols: []dumpCol{
		text("owner_id"), text("endpoint"), integer("timeouts"), timeCol("not_before")}},
	{name: "keyring_check", key: []string{"id"}, cols: []dumpCol{integer("id"), blob("sealed")}},
	{name: "replicas", key: []string{"id"}, cols: []dumpCol{text("id"), text("node"), timeCol("started_at"), timeCol("expires_at"),
		text("key_ids"), text("active_key")}},
	{name: "secret_revisions", key: []string{"user_id"}, cols: []dumpCol{text("user_id"), integer("rev")}},
	{name: "sandbox_reconcilers", key: []string{"backend"}, cols: []dumpCol{text("backend"), text("holder"), timeCol("expires_at")}},
	{name: "conversation_leases", key: []string{"conversation_id"}, cols: []dumpCol{
		text("conversation_id"), text("holder"), text("node"), timeCol("expires_at")}},
	{name: "conversation_commands", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		integer("seq"), text("conversation_id"), text("kind"), timeCol("created_at")}},
}

// deriveFold computes a folded copy of the text column src, as fold does when the row is
// written.
func deriveFold(src string) func(store.Row) (any, error) {
	return func(r store.Row) (any, error) {
		s, ok := r.Cols[src].(string)
		if !ok {
			return nil, fmt.Errorf("column %s is %T, want a string", src, r.Cols[src])
		}
		return fold(s), nil
	}
}

// dumped is the columns of t that a dump carries, in order.
func (t dumpTable) dumped() []dumpCol {
	var cs []dumpCol
	for _, c := range t.cols {
		if c.derive == nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// Dump reads every row of every table in one read transaction of the readers (WAL gives it
// one snapshot, and writers go on meanwhile), in dumpTables' order, then the AUTOINCREMENT
// counters of sqlite_sequence as rows of store.SeqTable.
func (s *Store) Dump(ctx context.Context, fn func(store.Row) error) error {
	tx, err := s.r.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	defer tx.Rollback()
	for _, t := range dumpTables {
		if err := dumpRows(ctx, tx, t, fn); err != nil {
			return fmt.Errorf("dump %s: %w", t.name, err)
		}
	}
	for _, t := range dumpTables {
		if t.seq == "" {
			continue
		}
		var last int64
		err := tx.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, t.name).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("dump the counter of %s: %w", t.name, err)
		}
		if err := fn(store.Row{Table: store.SeqTable, Cols: map[string]any{"table": t.name, "last": last}}); err != nil {
			return err
		}
	}
	return nil
}

func dumpRows(ctx context.Context, tx *sql.Tx, t dumpTable, fn func(store.Row) error) error {
	cols := t.dumped()
	// The driver reads a BLOB of no bytes as a nil []byte, as it reads NULL: each BLOB
	// column comes with whether it is NULL, after the columns.
	exprs := make([]string, len(cols))
	var blobs []int
	for i, c := range cols {
		exprs[i] = c.name
		if c.kind == kindBlob {
			exprs = append(exprs, c.name+` IS NULL`)
			blobs = append(blobs, i)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(exprs, ", ")+` FROM `+t.name+` ORDER BY `+strings.Join(t.key, ", "))
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, len(exprs))
	dest := make([]any, len(exprs))
	for i := range vals {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for j, i := range blobs {
			if b, _ := vals[i].([]byte); vals[len(cols)+j] == int64(1) {
				vals[i] = nil
			} else if b == nil {
				vals[i] = []byte{}
			}
		}
		r := store.Row{Table: t.name, Cols: make(map[string]any, len(cols))}
		for i, c := range cols {
			v, err := neutral(c.kind, vals[i])
			if err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
			}
			r.Cols[c.name] = v
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// neutral turns v, as the driver read a column of kind k, into its store-neutral value.
func neutral(k colKind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kindText:
		switch v := v.(type) {
		case string:
			return v, nil
		case []byte:
			return string(v), nil
		}
	case kindBytes:
		switch v := v.(type) {
		case string:
			return []byte(v), nil
		case []byte:
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
		if v, ok := v.(int64); ok {
			return v != 0, nil
		}
	case kindTime:
		if v, ok := v.(int64); ok {
			return fromNanos(v), nil
		}
	}
	return nil, fmt.Errorf("unexpected %T", v)
}

// sqliteValue turns the store-neutral value v into what a column of kind k stores; the zero
// time.Time stores as the codec's zero.
func sqliteValue(k colKind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kindText:
		if v, ok := v.(string); ok {
			return v, nil
		}
	case kindBytes:
		if v, ok := v.([]byte); ok {
			return string(v), nil
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
			return nanos(v), nil
		}
	}
	return nil, fmt.Errorf("%T is not a value of this column", v)
}
