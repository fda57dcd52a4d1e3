package sandboxtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sandbox"
)

// Unavailable skips t because the machine lacks what it needs (bubblewrap, cgroups, Docker),
// or fails it when the environment variable CI is set: a CI machine must have everything, and
// a skip there would hide a backend that no longer runs.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this fails instead of skipping)", msg)
	}
	t.Skip(msg)
}

// testIsolation runs the checks of the isolation the backend promises in Options.
func (s *suite) testIsolation(t *testing.T) {
	checks := []struct {
		name    string
		promise bool
		skip    string
		check   func(*testing.T)
	}{
		{"Filesystem", s.opts.IsolatesFilesystem, "the backend does not isolate the filesystem", s.checkFilesystem},
		{"OtherSandboxes", s.opts.IsolatesSandboxes, "the backend does not isolate sandboxes from each other", s.checkOtherSandboxes},
		{"Network", s.opts.IsolatesNetwork, "the backend does not cut the network", s.checkNetwork},
		{"Memory", s.opts.LimitsMemory, "the backend does not limit memory", s.checkMemory},
		{"PIDs", s.opts.LimitsPIDs, "the backend does not limit processes", s.checkPIDs},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.promise {
				t.Skip(c.skip)
			}
			c.check(t)
		})
	}
}

// checkFilesystem: a file on the host outside the workspace can be neither read nor written,
// and nothing can be created on the host outside the workspace, not even next to it.
func (s *suite) checkFilesystem(t *testing.T) {
	secret := "agentd-isolation-" + NewKey()
	f, err := os.CreateTemp("", "agentd-secret-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(secret); err != nil {
		t.Fatal(err)
	}
	f.Close()
	outside, err := os.MkdirTemp("", "agentd-outside-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })

	bx := s.start(t, s.newBackend(t), s.spec())
	if res := run(t, bx.client, "cat "+f.Name()+" 2>/dev/null; true"); strings.Contains(res.Output, secret) {
		t.Fatalf("the sandbox read %s on the host", f.Name())
	}
	targets := []string{f.Name(), filepath.Join(outside, "escaped")}
	if bx.inst.HostWorkspace != "" {
		targets = append(targets, filepath.Join(filepath.Dir(bx.inst.HostWorkspace), "escaped"))
	}
	var script strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&script, "echo pwned > %s 2>/dev/null; ", p)
	}
	script.WriteString("true")
	run(t, bx.client, script.String())
	if got, err := os.ReadFile(f.Name()); err != nil || string(got) != secret {
		t.Fatalf("the sandbox changed %s on the host: %q, %v", f.Name(), got, err)
	}
	for _, p := range targets[1:] {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the sandbox created %s on the host (%v)", p, err)
		}
	}
}

// checkOtherSandboxes: a sandbox sees neither the processes nor the files of another.
func (s *suite) checkOtherSandboxes(t *testing.T) {
	b := s.newBackend(t)
	mine, other := s.start(t, b, s.spec()), s.start(t, b, s.spec())
	theirs, own := "sleep "+markerSeconds(), "sleep "+markerSeconds()
	run(t, other.client, "("+theirs+"; true) > /dev/null 2>&1 &")
	run(t, mine.client, "("+own+"; true) > /dev/null 2>&1 &")
	waitProcess(t, theirs)
	waitProcess(t, own)
	secret := "agentd-other-" + NewKey()
	run(t, other.client, "printf "+secret+" > other-secret")

	// Every command line the sandbox can see; its own marker proves the listing works.
	res := run(t, mine.client, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done`)
	if !strings.Contains(res.Output, own) {
		t.Fatalf("the sandbox does not see its own process %q in /proc: %q", own, res.Output)
	}
	if strings.Contains(res.Output, theirs) {
		t.Fatalf("the sandbox sees another sandbox's process %q", theirs)
	}
	paths := []string{"/proc/*/root" + other.inst.Workspace + "/other-secret"}
	if other.inst.HostWorkspace != "" {
		paths = append(paths, other.inst.HostWorkspace+"/other-secret")
	}
	res = run(t, mine.client, "cat "+strings.Join(paths, " ")+" 2>/dev/null; true")
	if strings.Contains(res.Output, secret) {
		t.Fatalf("the sandbox read another sandbox's file through %v", paths)
	}
}

// checkNetwork: with Network "none", a command can reach a server of the host neither
// through loopback nor through any other of the host's addresses. It needs bash, whose
// /dev/tcp is the client.
func (s *suite) checkNetwork(t *testing.T) {
	ln, err := s.host().listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	hosts := append([]string{"127.0.0.1"}, s.hostAddrs(t)...)
	spec := s.spec()
	spec.Network = sandbox.NetworkNone
	bx := s.start(t, s.newBackend(t), spec)
	for _, h := range hosts {
		res := run(t, bx.client, `[ -n "$BASH_VERSION" ] || { echo "no bash"; exit; }; `+
			"(exec 3<>/dev/tcp/"+h+"/"+port+") 2>/dev/null && echo connected || echo refused")
		if got := strings.TrimSpace(res.Output); got != "refused" {
			t.Errorf("connect to the host's %s:%s from a sandbox without network: %q, want refused", h, port, got)
		}
	}
}

// memoryLimit is the limit of the memory check: room for the runtime (a test binary built
// with -race is large) but far below what the hog asks for.
const memoryLimit = 256 << 20

// checkMemory: a command that allocates without bound is killed inside its sandbox; the
// sandbox's runtime, another sandbox and the host carry on.
func (s *suite) checkMemory(t *testing.T) {
	s.checkMemoryLimit(t, sandbox.Limits{MemoryBytes: memoryLimit})
}

// checkMemoryLimit is checkMemory in a sandbox with limits lim.
func (s *suite) checkMemoryLimit(t *testing.T, lim sandbox.Limits) {
	b := s.newBackend(t)
	spec := s.spec()
	spec.Limits = lim
	hog, other := s.start(t, b, spec), s.start(t, b, s.spec())
	// dd holds its block in memory: one of twice the limit is killed at the limit, and where
	// the limit does not hold it ends (status 0) having taken twice the limit, no more. One
	// process filling its own buffer needs little CPU; two that pass a pipe's worth at a time
	// (head | tail) took most of hogTimeout at a sandbox's CPU weight on a busy machine.
	res := runWithin(t, hog.client, fmt.Sprintf("dd if=/dev/zero of=/dev/null bs=%d count=1 iflag=fullblock 2>/dev/null; echo status=$?", 2*lim.MemoryBytes), hogTimeout)
	if !strings.Contains(res.Output, "status=137") {
		t.Fatalf("a memory hog in a sandbox limited to %d MiB was not killed (SIGKILL, status 137): %+v", lim.MemoryBytes>>20, res)
	}
	if res := run(t, hog.client, "echo alive"); res.Output != "alive\n" {
		t.Fatalf("the runtime of the hog's sandbox after the hog was killed: %+v", res)
	}
	if res := run(t, other.client, "echo alive"); res.Output != "alive\n" {
		t.Fatalf("another sandbox after the hog was killed: %+v", res)
	}
	inspect(t, b, hog.inst, sandbox.StateRunning)
}

// pidLimit is the limit of the fork-bomb check. It counts threads too (the runtime's among
// them), so it is kept well above what the runtime needs.
const pidLimit = 96

// The fork-bomb check counts the bomb pidSamples times once it has grown to half its limit,
// which it cannot do unless it forks freely up to near the limit.
const pidSamples = 50

// bombLifetime is how long a fork bomb of the checks keeps forking: long past the time the
// check needs to see it grow and count it, short enough that a bomb whose test died ends.
const bombLifetime = 3*changeTimeout + time.Minute

// bombGrowTimeout bounds the wait for a fork bomb to grow to half its limit.
const bombGrowTimeout = 2 * changeTimeout

// checkPIDs: a fork bomb is held by Limits.PIDs: it grows to many processes but never reaches
// the limit, and destroying the sandbox ends them all. The count of a bomb churns for ever
// (forks fail, processes exit, others fork), so the check holds it to a bound rather than
// waiting for it to settle; a bomb without a limit would pass the bound within moments.
func (s *suite) checkPIDs(t *testing.T) {
	s.checkPIDLimit(t, sandbox.Limits{PIDs: pidLimit})
}

// checkPIDLimit is checkPIDs in a sandbox with limits lim.
func (s *suite) checkPIDLimit(t *testing.T, lim sandbox.Limits) {
	pidLimit := int(lim.PIDs)
	bombGrowth := pidLimit / 2
	spec := s.spec()
	spec.Limits = lim
	bx := s.start(t, s.newBackend(t), spec)
	// Every process of the bomb is a bash fork of this command, so its command line carries
	// the marker. Each one forks two more and waits for them; forks beyond the limit fail.
	// The bomb stops forking after bombLifetime (bash's SECONDS carries into its forks), so
	// that one left behind by a test binary killed mid-check dies out by itself.
	marker := "agentd-fork-bomb-" + markerSeconds()
	run(t, bx.client, fmt.Sprintf(": %s; bomb() { ((SECONDS < %d)) || return; bomb & bomb & wait; }; (bomb) > /dev/null 2>&1 < /dev/null &",
		marker, int(bombLifetime.Seconds())))

	most := 0
	count := func() int {
		t.Helper()
		n := len(processesWith(marker))
		if n >= pidLimit {
			t.Fatalf("the fork bomb runs %d processes with a limit of %d", n, pidLimit)
		}
		most = max(most, n)
		return n
	}
	// Growing takes the bomb, at a sandbox's CPU weight, well over a minute on a machine
	// whose CPUs are taken (stress-ng and the other backends' suites): it has twice that,
	// and forks for longer still (bombLifetime).
	deadline := time.Now().Add(bombGrowTimeout)
	for n := count(); n < bombGrowth; n = count() {
		if time.Now().After(deadline) {
			t.Fatalf("the fork bomb grew to no more than %d processes within %v (the last count %d); the check needs %d",
				most, bombGrowTimeout, n, bombGrowth)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The pause only spreads the samples over some of the bomb's churn; the check's outcome
	// does not depend on how long it lasts.
	for range pidSamples {
		count()
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the fork bomb ran at most %d processes in %d counts after it grew, with a limit of %d", most, pidSamples, pidLimit)
	s.destroyAndCheck(t, bx, marker)
}
