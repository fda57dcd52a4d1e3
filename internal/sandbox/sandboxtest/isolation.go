package sandboxtest

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/sandbox"
)

// testIsolation runs the checks of the isolation the backend promises in Options.
func (s *suite) testIsolation(t *testing.T) {
	t.Run("Filesystem", func(t *testing.T) {
		if !s.opts.IsolatesFilesystem {
			t.Skip("the backend does not isolate the filesystem")
		}
		s.checkFilesystem(t)
	})
	t.Run("Network", func(t *testing.T) {
		if !s.opts.IsolatesNetwork {
			t.Skip("the backend does not cut the network")
		}
		s.checkNetwork(t)
	})
	t.Run("PIDs", func(t *testing.T) {
		if !s.opts.LimitsPIDs {
			t.Skip("the backend does not limit processes")
		}
		s.checkPIDs(t)
	})
}

// checkFilesystem: a file on the host outside the workspace is invisible to commands.
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
	bx := s.start(t, s.newBackend(t), s.spec())
	res := run(t, bx.client, "cat "+f.Name()+" 2>/dev/null; true")
	if strings.Contains(res.Output, secret) {
		t.Fatalf("the sandbox read %s on the host", f.Name())
	}
}

// checkNetwork: with Network "none", a command cannot connect to a port on the host.
func (s *suite) checkNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	spec := s.spec()
	spec.Network = sandbox.NetworkNone
	bx := s.start(t, s.newBackend(t), spec)
	res := run(t, bx.client, "(exec 3<>/dev/tcp/127.0.0.1/"+port+") 2>/dev/null && echo connected || echo refused")
	if strings.TrimSpace(res.Output) != "refused" {
		t.Fatalf("a sandbox without network reached the host: %+v", res)
	}
}

// checkPIDs: with Limits.PIDs set, forking more processes than that fails.
func (s *suite) checkPIDs(t *testing.T) {
	const limit, tries = 32, 100
	spec := s.spec()
	spec.Limits.PIDs = limit
	bx := s.start(t, s.newBackend(t), spec)
	script := fmt.Sprintf("for i in $(seq %d); do sleep 30 & done 2>/dev/null; n=$(jobs -p | wc -l); kill $(jobs -p) 2>/dev/null; echo $n", tries)
	res := run(t, bx.client, script)
	n, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("count processes: %+v", res)
	}
	if n >= limit {
		t.Fatalf("started %d processes with a limit of %d", n, limit)
	}
}
