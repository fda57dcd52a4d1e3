package sandboxtest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// canaryEnv is set in the server's (the test's) environment while a sandbox starts; it
// stands for the LLM keys a server holds.
const canaryEnv = "AGENTD_TEST_SERVER_SECRET"

// testRuntimeEnvironment: the runtime, and so every command, gets the spec's initial
// environment and what the backend adds (Options.Env), never the server's environment, and
// never its session key, which comes by other means than the environment.
func (s *suite) testRuntimeEnvironment(t *testing.T) {
	canary := "must-not-leak-" + NewKey()
	t.Setenv(canaryEnv, canary)
	spec := s.spec()
	if spec.InitialEnv == nil {
		spec.InitialEnv = map[string]string{}
	}
	spec.InitialEnv["AGENTD_TEST_B"] = "2"
	spec.InitialEnv["AGENTD_TEST_A"] = "1 with spaces"
	bx := s.start(t, s.newBackend(t), spec)

	want := map[string]string{}
	if s.opts.Env != nil {
		want = s.opts.Env(bx.inst)
	}
	for k, v := range spec.InitialEnv {
		want[k] = v
	}

	// What a command sees.
	got := parseEnv(run(t, bx.client, "env -0").Output)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("a command's %s is %q, want %q", k, got[k], v)
		}
	}
	checkNoSecret(t, "a command's environment", got, canary, bx.key)
	if bx.secret != "" {
		checkNoSecret(t, "a command's environment", got, canary, bx.secret)
	}

	// What the sandbox's processes were started with, seen from the host: a variable that a
	// process removed from its own environment is still in the one it was given.
	procs := processesWith(bx.inst.ID)
	if len(procs) == 0 {
		t.Fatalf("no process on the host names sandbox %s", bx.inst.ID)
	}
	for _, p := range procs {
		pid, _, _ := strings.Cut(p, ":")
		b, err := os.ReadFile("/proc/" + pid + "/environ")
		if errors.Is(err, os.ErrNotExist) {
			continue // it exited meanwhile
		}
		if err != nil {
			t.Fatalf("read the environment of %s: %v", p, err)
		}
		checkNoSecret(t, "the environment of process "+p, parseEnv(string(b)), canary, bx.key)
		if bx.secret != "" {
			checkNoSecret(t, "the environment of process "+p, parseEnv(string(b)), canary, bx.secret)
		}
	}
}

// checkNoSecret fails t if env holds the server's canary variable or the session key in any
// name or value.
func checkNoSecret(t *testing.T, what string, env map[string]string, canary, key string) {
	t.Helper()
	for k, v := range env {
		switch {
		case k == canaryEnv || strings.Contains(v, canary):
			t.Errorf("%s holds the server's %s", what, canaryEnv)
		case strings.Contains(k, key) || strings.Contains(v, key):
			t.Errorf("%s holds the session key (in %s)", what, k)
		}
	}
}

// parseEnv reads NAME=value entries, each ended by a NUL.
func parseEnv(s string) map[string]string {
	env := map[string]string{}
	for entry := range strings.SplitSeq(s, "\x00") {
		if k, v, ok := strings.Cut(entry, "="); ok {
			env[k] = v
		}
	}
	return env
}
