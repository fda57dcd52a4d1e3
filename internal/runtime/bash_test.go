package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

func (w *wsServer) postJSON(path, body string) answer {
	w.t.Helper()
	return w.do(http.MethodPost, path, nil, http.Header{"Content-Type": {"application/json"}}, strings.NewReader(body))
}

// startBash starts a command and returns its BashCommand.
func (w *wsServer) startBash(body string) runtimeclient.BashEvent {
	w.t.Helper()
	a := w.postJSON(runtimeclient.RouteBashStart, body)
	if a.status != http.StatusOK {
		w.t.Fatalf("start %s: %d %s", body, a.status, a.body)
	}
	var cmd runtimeclient.BashEvent
	if err := json.Unmarshal(a.body, &cmd); err != nil {
		w.t.Fatal(err)
	}
	return cmd
}

// bashOutput polls the search route until the command's output has an exit code.
func (w *wsServer) bashOutput(commandID string) runtimeclient.BashEvent {
	w.t.Helper()
	q := url.Values{"command_id__eq": {commandID}, "kind__eq": {runtimeclient.KindBashOutput}}
	deadline := time.Now().Add(60 * time.Second)
	var page runtimeclient.BashEventPage
	for {
		w.getJSON(runtimeclient.RouteBashSearch, q, &page)
		for _, e := range page.Items {
			if e.ExitCode != nil {
				return e
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("command %s has no exit code after 60s; last page: %+v", commandID, page)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBashStartAndSearch(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	if err := os.Mkdir(filepath.Join(w.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := w.startBash(`{"command": "pwd; echo oops >&2; exit 3", "cwd": "sub", "timeout": 30}`)
	if cmd.Kind != runtimeclient.KindBashCommand || cmd.Command == "" || cmd.Timeout != 30 || cmd.Cwd == nil || *cmd.Cwd != "sub" {
		t.Fatalf("command event: %+v", cmd)
	}
	out := w.bashOutput(cmd.ID)
	if *out.ExitCode != 3 || *out.Stdout != filepath.Join(w.ws, "sub")+"\n" || *out.Stderr != "oops\n" || out.CommandID != cmd.ID {
		t.Fatalf("output: %+v", out)
	}

	var got runtimeclient.BashEvent
	w.getJSON(runtimeclient.RouteBashEvents+out.ID, nil, &got)
	if got.ID != out.ID || got.Kind != runtimeclient.KindBashOutput {
		t.Fatalf("get %s: %+v", out.ID, got)
	}
	if a := w.get(runtimeclient.RouteBashEvents+"nope", nil); a.status != http.StatusNotFound {
		t.Fatalf("unknown event: %d %s", a.status, a.body)
	}

	// Both events, in either order; the wire shape of each kind has its own fields, nulls
	// included.
	var page runtimeclient.BashEventPage
	w.getJSON(runtimeclient.RouteBashSearch, url.Values{"sort_order": {"TIMESTAMP_DESC"}}, &page)
	if len(page.Items) != 2 || page.Items[0].ID != out.ID || page.Items[1].ID != cmd.ID {
		t.Fatalf("search: %+v", page)
	}
	a := w.get(runtimeclient.RouteBashSearch, url.Values{"limit": {"1"}})
	var raw struct {
		Items      []map[string]any `json:"items"`
		NextPageID *string          `json:"next_page_id"`
	}
	if err := json.Unmarshal(a.body, &raw); err != nil || len(raw.Items) != 1 || raw.NextPageID == nil || *raw.NextPageID != out.ID {
		t.Fatalf("first page: %s", a.body)
	}
	if _, ok := raw.Items[0]["exit_code"]; ok {
		t.Fatalf("a BashCommand carries BashOutput's fields: %s", a.body)
	}
}

func TestBashExecute(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	a := w.postJSON(runtimeclient.RouteBashExecute, `{"command": "echo hi"}`)
	var out runtimeclient.BashEvent
	if a.status != http.StatusOK || json.Unmarshal(a.body, &out) != nil || out.ExitCode == nil || *out.ExitCode != 0 || *out.Stdout != "hi\n" {
		t.Fatalf("execute: %d %s", a.status, a.body)
	}
	var page runtimeclient.BashEventPage
	w.getJSON(runtimeclient.RouteBashSearch, url.Values{"command_id__eq": {out.CommandID}, "kind__eq": {runtimeclient.KindBashCommand}}, &page)
	if len(page.Items) != 1 || page.Items[0].Timeout != 300 || page.Items[0].Cwd != nil {
		t.Fatalf("the command, with its defaults: %+v", page)
	}
}

// TestBashTimeoutKillsGroup checks that a command past its timeout is killed with what it
// started, and that its output says so.
func TestBashTimeoutKillsGroup(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	// The timeout must fire after the shell has started the background process: a machine
	// too busy to get there within the timeout is given a longer one.
	for timeout := 1; ; timeout *= 2 {
		pidFile := fmt.Sprintf("bg%d.pid", timeout)
		cmd := w.startBash(fmt.Sprintf(`{"command": "sleep 300 > /dev/null 2>&1 & echo $! > %s; echo started; sleep 300", "timeout": %d}`, pidFile, timeout))
		out := w.bashOutput(cmd.ID)
		if *out.ExitCode != -1 || !strings.Contains(*out.Stderr, "timeout") {
			t.Fatalf("output: %+v", out)
		}
		b, err := os.ReadFile(filepath.Join(w.ws, pidFile))
		if *out.Stdout != "started\n" || err != nil {
			if timeout >= 16 {
				t.Fatalf("the command did not get as far as its background process in %ds: %+v, %v", timeout, out, err)
			}
			continue
		}
		waitGone(t, strings.TrimSpace(string(b)))
		return
	}
}

func TestBashValidation(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	for _, body := range []string{
		`{}`,
		`{"command": ""}`,
		`{"command": "true", "timeout": 0}`,
		`{"command": "true", "timeout": 3601}`,
		`{"command": "true", "cwd": "missing"}`,
		`{"command": 5}`,
		`not json`,
	} {
		a := w.postJSON(runtimeclient.RouteBashStart, body)
		if a.status != http.StatusUnprocessableEntity || a.detail() == "" {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
	if a := w.get(runtimeclient.RouteBashSearch, url.Values{"sort_order": {"SIDEWAYS"}}); a.status != http.StatusUnprocessableEntity {
		t.Errorf("bad sort order: %d %s", a.status, a.body)
	}
}

func TestBashOutputHeadAndTail(t *testing.T) {
	w := newWorkspaceServer(t, 0)
	out := w.bashOutput(w.startBash(fmt.Sprintf(`{"command": "echo first; head -c %d /dev/zero | tr '\\0' x; echo; echo last"}`, 4*maxBashStreamBytes)).ID)
	s := *out.Stdout
	if !strings.HasPrefix(s, "first\n") || !strings.HasSuffix(s, "last\n") || !strings.Contains(s, "bytes of output dropped") || len(s) > maxBashStreamBytes+100 {
		t.Fatalf("output of %d bytes: %.80q … %.80q", len(s), s, s[max(0, len(s)-80):])
	}
}

// TestBashEventsBounded checks that the oldest events are dropped past the bound.
func TestBashEventsBounded(t *testing.T) {
	s, err := NewServer(ServerConfig{Workspace: t.TempDir(), SessionKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b := s.bash
	for i := range maxBashEvents + 10 {
		b.mu.Lock()
		b.appendLocked(runtimeclient.BashEvent{Kind: runtimeclient.KindBashCommand, ID: fmt.Sprint(i)})
		b.mu.Unlock()
	}
	page := b.search(runtimeclient.BashSearchQuery{Limit: 100})
	if len(b.events) != maxBashEvents || page.Items[0].ID != "10" {
		t.Fatalf("kept %d events, first %s", len(b.events), page.Items[0].ID)
	}
	if _, ok := b.get("9"); ok {
		t.Fatal("a dropped event is still found")
	}
}

// TestBashCloseKills checks that closing the runtime kills the running commands.
func TestBashCloseKills(t *testing.T) {
	ws := t.TempDir()
	s, err := NewServer(ServerConfig{Workspace: ws, SessionKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, done, err := s.bash.start(runtimeclient.BashRequest{Command: "sleep 300", Timeout: 3600}, ws)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	<-done // Close waited for it; this only checks the output was recorded
	if _, _, err := s.bash.start(runtimeclient.BashRequest{Command: "true", Timeout: 1}, ws); err == nil {
		t.Fatal("a command started after Close")
	}
}

func TestHeadTailBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"under the limit", []string{"ab", "cd"}, "abcd"},
		{"at the limit", []string{"abcdefgh"}, "abcdefgh"},
		{"over, one write", []string{"abcdefghij"}, "abcd\n[... 2 bytes of output dropped ...]\nghij"},
		{"over, many writes", []string{"ab", "cde", "fghij", "kl"}, "abcd\n[... 4 bytes of output dropped ...]\nijkl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &headTailBuffer{limit: 8}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %q: %d %v", w, n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
