package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// postgresServer is the replicas figures' PostgreSQL: a throwaway server on loopback, as the
// tests start theirs (pgtest), with a database for each figure.
type postgresServer struct {
	url  string
	stop func() error
	// postmaster is the pid of the server's first process, whose children serve the
	// connections.
	postmaster string
}

// startPostgres starts the server. The caller stops it (close), also when a figure fails.
func startPostgres(ctx context.Context) (_ *postgresServer, err error) {
	srv, err := pgtest.StartServer(ctx, pgtest.ServerOptions{})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	url := srv.URL()
	p := &postgresServer{url: url, stop: srv.Stop}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// A connection's server process is a child of the postmaster.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return nil, err
	}
	f, err := procStat(strconv.Itoa(backend))
	if err != nil {
		return nil, err
	}
	p.postmaster = f[statPPID]
	return p, nil
}

// close stops the server and removes its directory.
func (p *postgresServer) close() error { return p.stop() }

// database makes a new, empty database for the figure name and returns its URL.
func (p *postgresServer) database(ctx context.Context, name string) (string, error) {
	return pgtest.CreateDatabase(ctx, p.url, "agentd_bench_"+name)
}

// version is the server's version, for the notes.
func (p *postgresServer) version(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		return "(version unknown)"
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "(version unknown)"
	}
	return v
}

// cpu is the CPU time (user and system) the server's processes have used: the postmaster's
// own, that of its children that ended (it waited for them) and that of its live children.
func (p *postgresServer) cpu() (time.Duration, error) {
	f, err := procStat(p.postmaster)
	if err != nil {
		return 0, err
	}
	total, err := ticks(f, statUTime, statCSTime)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f, err := procStat(e.Name())
		if err != nil || f[statPPID] != p.postmaster {
			continue // gone meanwhile, or not the server's
		}
		n, err := ticks(f, statUTime, statSTime)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return time.Duration(total) * 10 * time.Millisecond, nil
}

// agentdAndPostgresCPU is the CPU time used by this process (the servers the figures start in
// it) and by PostgreSQL's processes together.
func (p *postgresServer) agentdAndPostgresCPU() (time.Duration, error) {
	a, err := processCPU()
	if err != nil {
		return 0, err
	}
	b, err := p.cpu()
	return a + b, err
}

// The fields of /proc/<pid>/stat that procStat returns, counted from the state (field 3):
// the parent's pid, and the CPU times in clock ticks (100 a second on Linux) of the process
// and of its children that it waited for.
const (
	statPPID   = 1
	statUTime  = 11
	statSTime  = 12
	statCSTime = 14
)

// procStat returns the fields of /proc/<pid>/stat after the command (which may hold spaces
// and parentheses), from the state on.
func procStat(pid string) ([]string, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%s/stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) <= statCSTime {
		return nil, fmt.Errorf("parse /proc/%s/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// ticks sums the fields from to through of a procStat.
func ticks(f []string, from, through int) (int64, error) {
	var sum int64
	for _, s := range f[from : through+1] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/*/stat: %w", err)
		}
		sum += n
	}
	return sum, nil
}
