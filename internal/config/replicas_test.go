package config

import (
	"strings"
	"testing"
)

// TestDatabase: sqlite by default; a PostgreSQL URL from a flag or the environment; anything
// else refused with an error that does not repeat the URL, which may hold a password.
func TestDatabase(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		want     string
		postgres bool
		err      string
	}{
		{name: "default", want: "sqlite"},
		{name: "flag", args: []string{"--database", "postgres://a:pw@db:5432/agentd"}, want: "postgres://a:pw@db:5432/agentd", postgres: true},
		{name: "environment", env: map[string]string{"AGENTD_DATABASE": "postgresql://db/agentd?sslmode=disable"}, want: "postgresql://db/agentd?sslmode=disable", postgres: true},
		{name: "another scheme", args: []string{"--database", "mysql://a:hunter2@db/x"}, err: "want sqlite or a PostgreSQL URL"},
		{name: "not a URL", args: []string{"--database", "postgres://a:hunter2@[db"}, err: "want sqlite or a PostgreSQL URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error %v, want one saying %q without the password", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Database != tc.want || c.Postgres() != tc.postgres {
				t.Fatalf("database %q (postgres %v), want %q (%v)", c.Database, c.Postgres(), tc.want, tc.postgres)
			}
		})
	}
}

// TestNodeName: the default is the host's name and a digest of the data directory, the same
// for the same directory and another for another; a chosen name is kept if it is one.
func TestNodeName(t *testing.T) {
	a, b := DefaultNodeName("Build-7.example.com", "/srv/a"), DefaultNodeName("build-7", "/srv/b")
	if !strings.HasPrefix(a, "build-7-") || len(a) != len("build-7-")+8 || a == b || a != DefaultNodeName("build-7", "/srv/a") {
		t.Fatalf("default names %q and %q", a, b)
	}
	if got := DefaultNodeName("", "/x"); !strings.HasPrefix(got, "node-") || !validNodeName(got) {
		t.Fatalf("default name without a host name: %q", got)
	}
	c, ok := loadCase(t, nil, env(nil), "")
	if ok && !validNodeName(c.NodeName) {
		t.Fatalf("default node name %q", c.NodeName)
	}
	c, ok = loadCase(t, []string{"--node-name", "worker-3.eu"}, env(nil), "")
	if ok && c.NodeName != "worker-3.eu" {
		t.Fatalf("node name %q", c.NodeName)
	}
	loadCase(t, []string{"--node-name", "a/b"}, env(nil), "node name")
}
