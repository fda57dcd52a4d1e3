package main_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandLine: the subcommands, usage errors and configuration errors, as a shell sees
// them. No case may leave a server running or touch a data directory it was refused.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.toml")
	badToml := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(badToml, []byte("adress = \"127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// dataDirArg stands for a data directory of the case's own.
	const dataDirArg = "<data dir>"
	serve := func(more ...string) []string {
		return append([]string{"serve", "--data-dir", dataDirArg, "--addr", "127.0.0.1:0"}, more...)
	}
	tests := []struct {
		name        string
		args        []string
		env         []string
		code        int
		stdout      string // exact, when not empty
		stderrHas   []string
		stdoutHas   []string
		noDataDir   bool // the refused command must not have created the data directory
		emptyStdout bool // nothing at all on stdout
	}{
		{name: "version", args: []string{"version"}, stdout: "agentd " + agentdVersion + "\n"},
		{name: "--version", args: []string{"--version"}, stdout: "agentd " + agentdVersion + "\n"},
		{name: "help", args: []string{"help"}, stdoutHas: []string{"Usage:", "agentd serve", "agentd rotate-key", "agentd migrate"}},
		{name: "no arguments", args: nil, code: 2, stderrHas: []string{"Usage:", "agentd serve"}, emptyStdout: true},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderrHas: []string{`unknown command "frobnicate"`, "Usage:"}, emptyStdout: true},
		{name: "unknown backend", args: serve("--sandbox-backend", "nope"), code: 1,
			stderrHas: []string{`sandbox backend "nope"`, "want auto, process, bwrap, docker or kubernetes"}, noDataDir: true, emptyStdout: true},
		{name: "unknown backend from env", args: serve(), env: []string{"AGENTD_SANDBOX_BACKEND=nope"}, code: 1,
			stderrHas: []string{`sandbox backend "nope"`}, noDataDir: true, emptyStdout: true},
		{name: "docker engine unreachable", args: serve("--sandbox-backend", "docker", "--docker-host", "unix:///nonexistent/docker.sock"), code: 1,
			stderrHas: []string{"failed to connect to the docker API", "/nonexistent/docker.sock"}, emptyStdout: true},
		{name: "missing config file", args: serve("--config", missing), code: 1,
			stderrHas: []string{"config file", "missing.toml", "no such file"}, noDataDir: true, emptyStdout: true},
		{name: "missing config file from env", args: serve(), env: []string{"AGENTD_CONFIG=" + missing}, code: 1,
			stderrHas: []string{"missing.toml", "no such file"}, noDataDir: true, emptyStdout: true},
		{name: "unknown config key", args: serve("--config", badToml), code: 1,
			stderrHas: []string{`unknown key "adress"`}, noDataDir: true, emptyStdout: true},
		{name: "bad address", args: []string{"serve", "--data-dir", dataDirArg, "--addr", "nowhere"}, code: 1,
			stderrHas: []string{`addr "nowhere"`}, noDataDir: true, emptyStdout: true},
		{name: "unknown flag", args: serve("--frobnicate"), code: 1,
			stderrHas: []string{"frobnicate"}, noDataDir: true, emptyStdout: true},
		{name: "unknown default spec", args: serve("--default-spec", "nope"), code: 1,
			stderrHas: []string{`default sandbox spec "nope"`}, emptyStdout: true},
		{name: "stray argument", args: serve("extra"), code: 1,
			stderrHas: []string{`unexpected argument "extra"`}, noDataDir: true, emptyStdout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(newDataDir(t), "data")
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, dataDirArg, dataDir)
			}
			stdout, stderr, code := runAgentd(t, tt.env, args...)
			failIfPanics(t, stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if tt.stdout != "" && stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout, tt.stdout)
			}
			if tt.emptyStdout && stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
			for _, s := range tt.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tt.noDataDir {
				if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused command created the data dir: %v", err)
				}
			}
		})
	}
}

// failIfPanics fails a test whose server panicked instead of reporting its error: every
// failure of app.New after the data directory is made (data dir locked, keyring or store
// unreadable, unknown default spec, failed reconcile, ...) must print the error and exit 1.
func failIfPanics(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "panic:") {
		t.Fatal("the server panicked instead of reporting its error; stderr:\n" + stderr)
	}
}

// TestLongDataDir: a data directory too long for sandbox sockets is refused at start-up with a
// message that says so, instead of failing every sandbox start later.
func TestLongDataDir(t *testing.T) {
	dir := filepath.Join(newDataDir(t), strings.Repeat("d", 90))
	_, stderr, code := runAgentd(t, nil, "serve", "--data-dir", dir, "--sandbox-backend", "process", "--addr", "127.0.0.1:0")
	failIfPanics(t, stderr)
	if code != 1 || !strings.Contains(stderr, "choose a shorter data directory") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}
