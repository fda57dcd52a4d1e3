package runtime

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// TestRunStream: the output reaches the caller while the command runs (the command waits for
// a file that the test writes only once it has seen the first line), a character split
// across two writes arrives whole, and the result carries the exit code and the whole output.
func TestRunStream(t *testing.T) {
	hs, ws := newTestServer(t, nil)
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(ws, "go-on")
	var mu sync.Mutex
	var pieces []string
	cmd := `echo one; until [ -e go-on ]; do sleep 0.01; done; printf 'caf\303'; sleep 0.05; printf '\251\n' >&2; exit 3`
	res, err := c.RunStream(context.Background(), runtimeclient.CommandRequest{Command: cmd, TimeoutSeconds: 60}, func(s string) {
		mu.Lock()
		pieces = append(pieces, s)
		mu.Unlock()
		if strings.Contains(s, "one") {
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Output != "one\ncafé\n" || res.TimedOut || res.Truncated {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(pieces, ""); got != res.Output {
		t.Fatalf("pieces %q do not add up to the output %q", pieces, res.Output)
	}
	for _, p := range pieces {
		if strings.ContainsRune(p, '\uFFFD') {
			t.Fatalf("a piece holds a broken character: %q", pieces)
		}
	}
}

// TestRunStreamRefusals: a bad request is answered before anything runs, as /api/command
// answers it.
func TestRunStreamRefusals(t *testing.T) {
	hs, _ := newTestServer(t, nil)
	c, err := runtimeclient.NewClient(hs.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RunStream(context.Background(), runtimeclient.CommandRequest{Command: "true", Cwd: "/nonexistent"}, nil)
	var se *runtimeclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(se.Body, "not a directory") {
		t.Fatalf("a missing cwd: %v", err)
	}
	bad, _ := runtimeclient.NewClient(hs.URL, "wrong")
	if _, err := bad.RunStream(context.Background(), runtimeclient.CommandRequest{Command: "true"}, nil); !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %v", err)
	}
}
