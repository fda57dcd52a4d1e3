package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// benchListingPostgres measures the listings on PostgreSQL at each of o.listingRows, as the
// SQLite listing figures measure them, over the same store: theirs, when they ran (seeded),
// else one seeded the same way (seedListing, through a server on SQLite); copied into a new
// database with store.Copy, and served by a server on that database on the seeded store's
// data directory, whose keyring sealed it.
func benchListingPostgres(ctx context.Context, o options, pg *postgresServer, bin, dir string, seeded listingSeeds, logw io.Writer, progress func(string, ...any)) ([]row, []string, error) {
	ls := listingStore{name: "PostgreSQL through pgx, its processes included", cpu: pg.agentdAndPostgresCPU,
		cpuAlso: "; PostgreSQL's processes included", profile: "listing-postgres"}
	var rows []row
	var notes []string
	for _, n := range o.listingRows {
		seed, ok := seeded[n]
		how := "the SQLite listing figures' store"
		if !ok {
			progress("storing %d conversations, start tasks, sandboxes and events on SQLite, to copy into PostgreSQL", n)
			var err error
			if seed, err = seedListingDir(ctx, o, bin, filepath.Join(dir, fmt.Sprintf("l%d", n)), n, logw); err != nil {
				return nil, nil, err
			}
			how = "as the SQLite listing figures seed theirs"
		}
		dbURL, err := pg.database(ctx, fmt.Sprintf("listing_%d", n))
		if err != nil {
			return nil, nil, err
		}
		progress("copying the store of %d rows into PostgreSQL", n)
		copied, err := copyToPostgres(ctx, filepath.Join(seed.dataDir, app.DBFile), dbURL)
		if err != nil {
			return nil, nil, err
		}
		r, err := func() ([]row, error) {
			s, err := startPostgresServer(ctx, bin, seed.dataDir, dbURL, o.clients, logw)
			if err != nil {
				return nil, err
			}
			defer s.close()
			// A store of its own on the database, for the store's reads alone.
			st, err := postgres.Open(ctx, dbURL, postgres.Options{})
			if err != nil {
				return nil, err
			}
			defer st.Close()
			var rows []row
			for _, ep := range listingEndpoints {
				read := func() error { return ep.read(ctx, st, s.ownerID, seed) }
				r, note, err := s.benchEndpoint(ctx, o, ls, ep.name+" on PostgreSQL", ep.path(seed), n, read, progress)
				if err != nil {
					return nil, err
				}
				rows = append(rows, r...)
				// Where the store's read spends its CPU time: this process (pgx) or the server.
				self, err := cpuPer(processCPU, 200, read)
				if err != nil {
					return nil, err
				}
				db, err := cpuPer(pg.cpu, 200, read)
				if err != nil {
					return nil, err
				}
				notes = append(notes, fmt.Sprintf("%s (of the store's read alone, %s of CPU time in this process, pgx's, and %s in PostgreSQL's, each read again 200 times).",
					strings.TrimSuffix(note, "."), unitTime.format(seconds(self)), unitTime.format(seconds(db))))
			}
			return rows, nil
		}()
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, r...)
		notes = append(notes, fmt.Sprintf("PostgreSQL listing store of %d rows each: seeded on SQLite (%s) in %.1f s, copied into PostgreSQL (store.Copy: COPY and ANALYZE in one transaction, then VACUUM) in %.1f s.",
			n, how, seed.took.Seconds(), copied.Seconds()))
	}
	notes = append(notes, "PostgreSQL listing figures: as the SQLite ones, on a server whose store is a PostgreSQL database on the same machine (loopback TCP); their CPU times add the CPU time of PostgreSQL's processes (its postmaster and every child, from /proc) to the process's, as the database's work is done there.")
	return rows, notes, nil
}

// seedListingDir seeds the listing store of n rows (seedListing) in dataDir, through a
// server on SQLite there that it stops before it returns.
func seedListingDir(ctx context.Context, o options, bin, dataDir string, n int, logw io.Writer) (listingSeed, error) {
	s, err := startServer(ctx, bin, dataDir, o.clients, logw, "")
	if err != nil {
		return listingSeed{}, err
	}
	defer s.close()
	return s.seedListing(ctx, dataDir, n)
}

// copyToPostgres copies the SQLite store in file into the empty database at dbURL and
// returns how long that took.
func copyToPostgres(ctx context.Context, file, dbURL string) (time.Duration, error) {
	src, err := sqlite.Open(ctx, file)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	start := time.Now()
	if _, err := store.Copy(ctx, dst, src); err != nil {
		return 0, fmt.Errorf("copy the listing store into PostgreSQL: %w", err)
	}
	return time.Since(start), nil
}
