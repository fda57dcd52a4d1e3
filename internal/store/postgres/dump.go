package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store"
)

// The dump of this store (store.Dumper) and its restore (store.Restorer, restore.go) both
// follow dumpTables: every table of the schema, every column of each, and how each column's
// value reads as a store-neutral one. A test reads the schema and fails on a column that
// dumpTables leaves out, so that a migration that adds one must say how it is copied.

var (
	_ store.Dumper   = (*Store)(nil)
	_ store.Restorer = (*Store)(nil)
)

// colKind is how a column's value reads as a store-neutral value (see store.Row).
type colKind int

const (
	kindText colKind = iota // text: string (JSON documents too)
	kindBlob                // bytea: []byte
	kindInt                 // integer, bigint: int64
	kindBool                // boolean: bool
	kindTime                // timestamptz: time.Time in UTC
)

// dumpCol is a column of a dumped table.
type dumpCol struct {
	name string
	kind colKind
	// derive, when set, makes the column derived: a dump leaves it out and a restore computes
	// it from the row's other columns. why says what it is, for readers of the schema test.
	derive func(store.Row) (any, error)
	why    string
}

// dumpTable is a table of the dump.
type dumpTable struct {
	name string
	// key is the table's primary key: the order of its rows in a dump, and what names a row
	// in an error.
	key  []string
	cols []dumpCol
	// seq names the table's identity column, whose sequence the dump carries as a row of
	// store.SeqTable; "" when it has none.
	seq string
	// foreign are columns that other stores dump and this one does not keep, and why: a
	// restore accepts and drops them.
	foreign map[string]string
}

// Constructors of columns, so that dumpTables reads as the schema does.
func colText(name string) dumpCol { return dumpCol{name: name, kind: kindText} }
func colBlob(name string) dumpCol { return dumpCol{name: name, kind: kindBlob} }
func colInt(name string) dumpCol  { return dumpCol{name: name, kind: kindInt} }
func colBool(name string) dumpCol { return dumpCol{name: name, kind: kindBool} }
func colTime(name string) dumpCol { return dumpCol{name: name, kind: kindTime} }

// colRev is a listing counter of migration 0012, which the listing cache reads (as the
// SQLite store's of its migrations 0012 and 0013): a copy keeps it, as any value is new to
// the empty cache of a new store.
var colRev = colInt("rev")

// dumpTables are the tables in the order of the dump: a table comes after those its rows
// refer to. It is the SQLite store's order, which also puts sandboxes and start tasks before
// conversations (a restore there fires no trigger on a conversation then).
var dumpTables = []dumpTable{
	{name: "users", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("name"), colBool("is_admin"), colTime("created_at")}},
	{name: "api_keys", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("user_id"), colText("name"), colText("prefix"), colBlob("hash"),
		colTime("created_at"), colTime("expires_at")}},
	{name: "web_sessions", key: []string{"hash"}, cols: []dumpCol{
		colBlob("hash"), colText("key_id"), colText("user_id"), colTime("created_at"), colTime("expires_at")}},
	{name: "settings", key: []string{"user_id"}, cols: []dumpCol{
		colText("user_id"), colText("values_json"), colText("secrets"), colTime("updated_at")}},
	{name: "provider_tokens", key: []string{"user_id", "provider"}, cols: []dumpCol{
		colText("user_id"), colText("provider"), colBlob("token_sealed"), colText("host"),
		colText("external_user_id"), colTime("updated_at")}},
	{name: "custom_secrets", key: []string{"user_id", "name"}, cols: []dumpCol{
		colText("user_id"), colText("name"), colText("description"), colBlob("value_sealed"),
		colTime("created_at"), colTime("updated_at")}},
	{name: "user_skills", key: []string{"user_id", "name"}, cols: []dumpCol{
		colText("user_id"), colText("name"), colText("triggers"), colText("description"), colText("content"),
		colTime("created_at"), colTime("updated_at")}},
	{name: "sandbox_specs", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("description"), colText("command"), colText("initial_env"), colText("working_dir"),
		colText("image"), colText("rootfs"), colText("network"), colText("limits"), colTime("created_at")}},
	{name: "sandboxes", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("owner_id"), colText("spec_id"), colText("backend"), colText("node"), colText("status"),
		colText("detail"), colBlob("session_key_sealed"), colBlob("session_key_hash"), colText("instance"),
		colTime("created_at"), colTime("updated_at"), colTime("active_at"), colRev}},
	{name: "start_tasks", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("owner_id"), colText("conversation_id"), colText("status"), colText("detail"),
		colText("sandbox_id"), colText("agent_server_url"), colText("request"),
		colTime("created_at"), colTime("updated_at"), colRev}},
	{name: "conversations", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("owner_id"), colText("sandbox_id"), colText("version"), colText("title"),
		{name: "title_fold", derive: deriveTitleFold, why: "the title folded to lower case, which TitleContains searches"},
		colText("selected_repository"), colText("selected_branch"), colText("git_provider"), colText("trigger_name"),
		colText("pr_numbers"), colText("llm_model"), colText("metrics"), colText("parent_id"), colBlob("request_sealed"),
		colText("secret_names"), colBlob("secrets_sealed"), colBool("public"), colText("tags"), colBool("title_by_user"),
		colText("execution_status"), colText("confirmation_policy"), colText("work_dir"), colText("waiting_for_node"), colTime("created_at"), colTime("updated_at"), colRev}},
	{name: "conversation_skills", key: []string{"conversation_id", "position"}, cols: []dumpCol{
		colText("conversation_id"), colInt("position"), colText("name"), colText("type"), colText("triggers"),
		colText("description"), colText("content"), colText("source"), colText("mcp_servers")}},
	{name: "pending_messages", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		colInt("seq"), colText("id"), colText("conversation_id"), colText("role"), colText("content"),
		colTime("created_at")}},
	{name: "events", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		colInt("seq"), colText("id"), colText("conversation_id"), colText("owner_id"), colText("kind"),
		colText("source"), colTime("ts"), colText("body"), colBlob("llm_text"),
		{name: "body_fold", derive: deriveBodyFold, why: "the text of a message event in lower case, which Filter.Body searches"}}},
	{name: "webhooks", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("owner_id"), colText("url"), colText("kinds"), colText("conversation_id"),
		colText("description"), colBlob("secret_sealed"), colTime("created_at")}},
	{name: "webhook_deliveries", key: []string{"id"}, cols: []dumpCol{
		colText("id"), colText("webhook_id"), colText("owner_id"), colText("kind"), colText("payload"),
		colText("status"), colInt("attempts"), colInt("response_code"), colText("error"), colTime("created_at"),
		colTime("updated_at"), colTime("next_attempt_at"), colTime("retry_until"), colText("endpoint"),
		colTime("claimed_until")}},
	{name: "webhook_endpoints", key: []string{"owner_id", "endpoint"}, cols: []dumpCol{
		colText("owner_id"), colText("endpoint"), colInt("timeouts"), colTime("not_before")}},
	{name: "keyring_check", key: []string{"id"}, cols: []dumpCol{colInt("id"), colBlob("sealed")}},
	{name: "replicas", key: []string{"id"}, cols: []dumpCol{colText("id"), colText("node"), colTime("started_at"), colTime("expires_at"),
		colText("key_ids"), colText("active_key")}},
	{name: "secret_revisions", key: []string{"user_id"}, cols: []dumpCol{colText("user_id"), colInt("rev")}},
	{name: "sandbox_reconcilers", key: []string{"backend"}, cols: []dumpCol{colText("backend"), colText("holder"), colTime("expires_at")}},
	{name: "conversation_leases", key: []string{"conversation_id"}, cols: []dumpCol{
		colText("conversation_id"), colText("holder"), colText("node"), colTime("expires_at")}},
	{name: "conversation_commands", key: []string{"seq"}, seq: "seq", cols: []dumpCol{
		colInt("seq"), colText("conversation_id"), colText("kind"), colTime("created_at")}},
}

func deriveTitleFold(r store.Row) (any, error) {
	title, ok := r.Cols["title"].(string)
	if !ok {
		return nil, fmt.Errorf("title is %T, want a string", r.Cols["title"])
	}
	return fold(title), nil
}

// deriveBodyFold is bodyFold of the row's event.
func deriveBodyFold(r store.Row) (any, error) {
	kind, ok := r.Cols["kind"].(string)
	if !ok {
		return nil, fmt.Errorf("kind is %T, want a string", r.Cols["kind"])
	}
	var body json.RawMessage
	switch b := r.Cols["body"].(type) {
	case string:
		body = json.RawMessage(b)
	case nil:
	default:
		return nil, fmt.Errorf("body is %T, want a string", b)
	}
	if f := bodyFold(event.Event{Kind: kind, Body: body}); f != nil {
		return *f, nil
	}
	return nil, nil
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

// Dump reads every row of every table in one REPEATABLE READ, READ ONLY transaction (one
// snapshot, while writers go on), in dumpTables' order, then the identity sequences of
// events and pending messages as rows of store.SeqTable.
func (s *Store) Dump(ctx context.Context, fn func(store.Row) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, t := range dumpTables {
		if err := dumpRows(ctx, tx, t, fn); err != nil {
			return fmt.Errorf("dump %s: %w", t.name, err)
		}
	}
	for _, t := range dumpTables {
		if t.seq == "" {
			continue
		}
		last, err := sequenceLast(ctx, tx, t)
		if err != nil {
			return fmt.Errorf("dump the sequence of %s: %w", t.name, err)
		}
		if err := fn(store.Row{Table: store.SeqTable, Cols: map[string]any{"table": t.name, "last": last}}); err != nil {
			return err
		}
	}
	return nil
}

// sequenceLast is the last value that the sequence of t's identity column handed out, 0
// when it handed out none. Sequences stand outside transactions: it may be past what the
// snapshot shows, which only skips numbers.
func sequenceLast(ctx context.Context, q querier, t dumpTable) (int64, error) {
	var last int64
	err := q.QueryRow(ctx, `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, $2)::regclass), 0)`,
		t.name, t.seq).Scan(&last)
	return last, err
}

func dumpRows(ctx context.Context, tx pgx.Tx, t dumpTable, fn func(store.Row) error) error {
	cols := t.dumped()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	rows, err := tx.Query(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+t.name+` ORDER BY `+strings.Join(t.key, ", "))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
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

// neutral turns v, as pgx decoded a column of kind k, into its store-neutral value.
func neutral(k colKind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case kindText:
		if v, ok := v.(string); ok {
			return v, nil
		}
	case kindBlob:
		if v, ok := v.([]byte); ok {
			return v, nil
		}
	case kindInt:
		switch v := v.(type) {
		case int64:
			return v, nil
		case int32:
			return int64(v), nil
		case int16:
			return int64(v), nil
		}
	case kindBool:
		if v, ok := v.(bool); ok {
			return v, nil
		}
	case kindTime:
		if v, ok := v.(time.Time); ok {
			return v.UTC(), nil
		}
	}
	return nil, fmt.Errorf("unexpected %T", v)
}
