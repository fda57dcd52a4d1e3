//go:build !agentd_runtime_only

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/cli"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// migrateHelp is the long help of agentd migrate; docs/migrate.md says more.
const migrateHelp = `Copy the SQLite store of a data directory into an empty PostgreSQL database, with nothing
lost: every row of every table, with its ids, times and Seq values, in one transaction.

  agentd migrate --to postgres://user@host:5432/agentd [--data-dir DIR]

Run it while agentd serve is stopped: it takes the data directory as serve does, and
refuses one in use. The database must be empty (a server that started on it once made its
first admin there: create a new database instead). Its schema is created as agentd serve
creates it. Sealed secrets are copied as they are: give every replica the data directory's
keyring.json. The password may come from PGPASSWORD or ~/.pgpass rather than the URL.
See docs/migrate.md.

`

// migrateStore copies the data directory's SQLite store into the empty PostgreSQL database
// named by --to, and says what it copied and what to do next. args are serve's flags (for
// the data directory) and --to.
func migrateStore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	to, rest, err := cutFlag(args, "to")
	if err != nil {
		return err
	}
	if to == "" {
		return cli.Usagef("agentd migrate needs --to, the URL of the empty PostgreSQL database to copy into (postgres://user@host:5432/agentd); see agentd migrate --help")
	}
	cfg, err := config.Load(rest, os.Getenv)
	if err != nil {
		return err
	}
	dbPath := filepath.Join(cfg.DataDir, app.DBFile)
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s has no %s: name agentd's data directory with --data-dir (or AGENTD_DATA_DIR)", cfg.DataDir, app.DBFile)
	} else if err != nil {
		return err
	}
	unlock, err := app.LockDataDir(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("%w (stop agentd serve before migrating its data)", err)
	}
	defer unlock()
	keyring := filepath.Join(cfg.DataDir, app.KeyringFile)
	_, keyErr := os.Stat(keyring)

	src, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer src.Close()
	target := describeURL(to)
	dst, err := postgres.Open(ctx, to, postgres.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	defer dst.Close()

	tally, err := store.Copy(ctx, dst, src)
	if errors.Is(err, store.ErrNotEmpty) {
		return fmt.Errorf("%s: %w: agentd migrate copies into an empty database only, and copied nothing; "+
			"create a new database (createdb) and name it with --to", target, err)
	}
	if err != nil {
		return fmt.Errorf("copy into %s: %w (nothing was copied: the transaction was rolled back)", target, err)
	}

	fmt.Fprintf(stdout, "copied the SQLite store of %s into %s:\n", cfg.DataDir, target)
	total, width := 0, len("total")
	for _, tr := range tally {
		total += tr.Rows
		width = max(width, len(tr.Table))
	}
	for _, tr := range tally {
		fmt.Fprintf(stdout, "  %-*s %10d\n", width, tr.Table, tr.Rows)
	}
	fmt.Fprintf(stdout, "  %-*s %10d\n", width, "total", total)
	fmt.Fprintf(stdout, `
Ids, Seq values and times are as they were (times to the microsecond, which is what
PostgreSQL keeps). Sealed secrets (settings secrets, provider tokens, custom secrets, sandbox
session keys, conversation requests, webhook secrets) were copied as they are: they open only
with the keyring that sealed them. Next:
  1. give every agentd serve replica that uses this database a copy of
       %s
     (it is secret: keep it mode 0600);
  2. start agentd serve on the database (--database with its URL);
  3. keep %s until the replicas have run well: agentd migrate does not change it.
`, keyring, cfg.DataDir)
	if keyErr != nil {
		fmt.Fprintf(stderr, "agentd: warning: %s: %v: the sealed secrets copied cannot be opened without the keyring that sealed them\n", keyring, keyErr)
	}
	return nil
}

// cutFlag takes the flag name (-name, --name, with its value as the next argument or after
// "=") out of args, and returns its last value and the other arguments. Arguments after "--"
// are left alone.
func cutFlag(args []string, name string) (value string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return value, append(rest, args[i:]...), nil
		}
		flag := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if flag == a {
			rest = append(rest, a)
			continue
		}
		switch {
		case flag == name:
			if i+1 == len(args) {
				return "", nil, cli.Usagef("flag --%s needs a value", name)
			}
			value = args[i+1]
			i++
		case strings.HasPrefix(flag, name+"="):
			value = flag[len(name)+1:]
		default:
			rest = append(rest, a)
		}
	}
	return value, rest, nil
}

// describeURL names the database of a connection string for messages: a URL without its
// password, or the database and host of a key=value string (whose password is left out).
func describeURL(conn string) string {
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.RawQuery, u.Fragment = "", "" // the query may hold a password too
		return u.Redacted()
	}
	return "the PostgreSQL database of --to"
}
