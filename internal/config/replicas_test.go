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
