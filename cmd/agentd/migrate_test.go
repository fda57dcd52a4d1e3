//go:build !agentd_runtime_only

package main

import (
	"slices"
	"testing"

	"github.com/agentd/agentd/internal/cli"
)

func TestCutFlag(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		value string
		rest  []string
	}{
		{[]string{"--to", "postgres://h/db", "--data-dir", "d"}, "postgres://h/db", []string{"--data-dir", "d"}},
		{[]string{"--data-dir=d", "-to=postgres://h/db"}, "postgres://h/db", []string{"--data-dir=d"}},
		{[]string{"--to=a", "--to", "b"}, "b", nil},
		{[]string{"--data-dir", "d", "--", "--to", "x"}, "", []string{"--data-dir", "d", "--", "--to", "x"}},
		{[]string{"--total", "x", "to"}, "", []string{"--total", "x", "to"}},
	} {
		value, rest, err := cutFlag(tt.args, "to")
		if err != nil || value != tt.value || !slices.Equal(rest, tt.rest) {
			t.Errorf("cutFlag(%q) = %q, %q, %v; want %q, %q", tt.args, value, rest, err, tt.value, tt.rest)
		}
	}
	if _, _, err := cutFlag([]string{"--data-dir", "d", "--to"}, "to"); !cli.IsUsage(err) {
		t.Errorf("--to without a value: %v, want a usage error", err)
	}
}

func TestDescribeURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://agentd:s3cret@db:5432/agentd?sslmode=require&password=s3cret": "postgres://agentd:xxxxx@db:5432/agentd",
		"postgresql://db/agentd":                            "postgresql://db/agentd",
		"host=db user=agentd password=s3cret dbname=agentd": "the PostgreSQL database of --to",
	} {
		if got := describeURL(in); got != want {
			t.Errorf("describeURL(%q) = %q, want %q", in, got, want)
		}
	}
}
