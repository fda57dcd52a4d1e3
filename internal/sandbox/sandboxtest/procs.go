package sandboxtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// markerSeconds returns a sleep duration no other process on the machine is likely to use, so
// that "sleep <it>" finds exactly the process the test started.
func markerSeconds() string {
	return fmt.Sprintf("%d", 1_000_000+int(randomBytes(1)[0])<<12+int(randomBytes(1)[0]))
}

// processesWith returns "pid: cmdline" of every live process (not a zombie) whose command
// line contains any of needles. It sees what runs on this machine, which covers every backend
// whose processes the host can see.
func processesWith(needles ...string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []string{"read /proc: " + err.Error()}
	}
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 || isZombie(pid) {
			continue
		}
		args := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		for _, n := range needles {
			if strings.Contains(args, n) {
				out = append(out, fmt.Sprintf("%d: %s", pid, args))
				break
			}
		}
	}
	return out
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// waitProcess waits until a process whose command line contains needle runs.
func waitProcess(t *testing.T, needle string) {
	t.Helper()
	deadline := time.Now().Add(changeTimeout)
	for len(processesWith(needle)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no process %q appeared within %v", needle, changeTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CheckNoChildren fails t unless every child process of the test binary has exited and been
// reaped (a zombie child means a backend did not reap a runtime it started). It waits for
// reapers that run in the background, as long as a busy machine may make them take. The
// zombies it reports it then reaps, so that the tests after this one are not failed for it.
func CheckNoChildren(t testing.TB) {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(changeTimeout)
	for {
		var left []string
		var zombies []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			i := strings.LastIndexByte(string(b), ')')
			if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && f[1] == self {
				left = append(left, e.Name()+" (state "+f[0]+")")
				if pid, err := strconv.Atoi(e.Name()); err == nil && f[0] == "Z" {
					zombies = append(zombies, pid)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range zombies {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
			t.Fatalf("child processes left after %v: %v", changeTimeout, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
