package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a throwaway PostgreSQL server: its data directory, log and unix socket live in
// dir, which goes with it.
type server struct {
	bin  string // the directory of initdb and pg_ctl
	dir  string
	data string
	// asPostgres runs the server's programs as the postgres user (the tests run as root).
	asPostgres bool
	// netns is the network namespace (a name in /run/netns) the programs run in; empty:
	// this process's.
	netns string
	url   string
	port  int
}

// dirPrefix names the servers' directories in the temporary directory; ownerFile in each
// holds the pid of the test binary that started the server.
const (
	dirPrefix = "agentd-pgtest-"
	ownerFile = "owner.pid"
)

// startAttempts bounds the tries at a free port: another process may take the port found
// free before the server binds it.
const startAttempts = 3

// start initialises a cluster in a new temporary directory and starts its server on a free
// port of listen (loopback when empty), in the network namespace netns (this process's when
// empty). It removes what it made when it fails.
func start(ctx context.Context, netns, listen string) (_ *server, err error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	if listen == "" {
		listen = "127.0.0.1"
	}
	asPostgres := os.Geteuid() == 0
	reapOrphans(ctx, bin, asPostgres)
	s := &server{bin: bin, asPostgres: asPostgres, netns: netns}
	if s.dir, err = os.MkdirTemp("", dirPrefix); err != nil {
		return nil, err
	}
	s.data = filepath.Join(s.dir, "data")
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(s.dir))
		}
	}()
	if err := os.WriteFile(filepath.Join(s.dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	if s.asPostgres {
		if err := chownToPostgres(s.dir); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(ctx); err != nil {
		return nil, err
	}
	if ip := net.ParseIP(listen); ip == nil || !ip.IsLoopback() {
		// Trusted from any address, as initdb's configuration trusts loopback: the clients
		// there are the tests' own (pods of a test cluster, in a namespace of its own).
		if err := appendFile(filepath.Join(s.data, "pg_hba.conf"), "host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n"); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=%s -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", listen, port, s.dir)
		out, err := s.run(ctx, "pg_ctl", "-D", s.data, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "120", "-o", opts, "start")
		if err == nil {
			s.url = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", net.JoinHostPort(listen, strconv.Itoa(port)))
			s.port = port
			return s, nil
		}
		if attempt == startAttempts {
			log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
			return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, tail(log, 2000))
		}
	}
}

// initdb makes the cluster. Its default collation is ICU's en-US, whose order differs from
// byte order (see the package comment), with the C locale for the rest, independent of the
// machine's. A PostgreSQL without ICU (before 15, or built without it) gets the C locale alone.
func (s *server) initdb(ctx context.Context) error {
	args := []string{"-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"}
	out, err := s.run(ctx, "initdb", append(args, "--locale-provider=icu", "--icu-locale=en-US")...)
	if err == nil {
		return nil
	}
	if err := os.RemoveAll(s.data); err != nil {
		return err
	}
	if out2, err2 := s.run(ctx, "initdb", args...); err2 != nil {
		return fmt.Errorf("initdb: %w: %s\n(with ICU: %v: %s)", err2, out2, err, out)
	}
	return nil
}

// stop stops the server and removes its directory.
func (s *server) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if out, err := s.run(ctx, "pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop"); err != nil {
		errs = append(errs, fmt.Errorf("pg_ctl stop: %w: %s", err, out))
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// reapOrphans stops the servers, and removes the directories, of test binaries that died
// without stopping theirs (a panic or a -timeout ends a test binary without its teardown).
// A directory whose owner is alive, or unknown, is left alone.
func reapOrphans(ctx context.Context, bin string, asPostgres bool) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		orphan := &server{bin: bin, dir: dir, data: filepath.Join(dir, "data"), asPostgres: asPostgres}
		_, _ = orphan.run(ctx, "pg_ctl", "-D", orphan.data, "-m", "immediate", "-w", "stop")
		_ = os.RemoveAll(dir)
	}
}

// run runs one of PostgreSQL's programs, as the postgres user when the tests run as root, in
// the server's network namespace, and returns what it printed.
func (s *server) run(ctx context.Context, program string, args ...string) ([]byte, error) {
	argv := append([]string{filepath.Join(s.bin, program)}, args...)
	if s.asPostgres {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	if s.netns != "" {
		argv = append([]string{"nsenter", "--net=" + filepath.Join("/run/netns", s.netns)}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = s.dir // a directory the postgres user may enter, unlike the package's perhaps
	return cmd.CombinedOutput()
}

// findBin returns the directory of initdb and pg_ctl: that of the newest version under
// /usr/lib/postgresql (where Debian puts them, off PATH), else the one on PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "initdb"))
		return err != nil
	})
	if len(dirs) > 0 {
		slices.SortFunc(dirs, func(a, b string) int { return slices.Compare(versionOf(a), versionOf(b)) })
		return dirs[len(dirs)-1], nil
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("no initdb under /usr/lib/postgresql/*/bin nor on PATH (install the postgresql package)")
	}
	return filepath.Dir(initdb), nil
}

// versionOf is the version numbers of /usr/lib/postgresql/<version>/bin.
func versionOf(bin string) []int {
	var v []int
	for _, f := range strings.Split(filepath.Base(filepath.Dir(bin)), ".") {
		n, _ := strconv.Atoi(f)
		v = append(v, n)
	}
	return v
}

// chownToPostgres gives dir to the postgres user, whom the server runs as.
func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, and PostgreSQL must run as the postgres user: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// appendFile appends text to the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
