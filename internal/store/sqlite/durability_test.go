package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// killChildEnv, when set, makes the test binary the child of TestKillDurability: it writes to
// the database at that path until it is killed.
const killChildEnv = "AGENTD_SQLITE_KILL_CHILD_DB"

const (
	killOwner   = "owner"
	killWriters = 4
	killAfter   = 200 // reported writes before the parent kills the child
)

// TestKillDurability checks that a row whose write returned survives kill -9 of the process: a
// child writes from several goroutines and reports each write once it returned; the parent
// SIGKILLs it mid-stream, reopens the file and finds every reported row, and no half-written
// one.
func TestKillDurability(t *testing.T) {
	if path := os.Getenv(killChildEnv); path != "" {
		killChild(path)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	path := filepath.Join(t.TempDir(), "agentd.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()

	// Every line read was written by the child after its write returned; lines still in the
	// pipe when the child dies are read after the kill.
	var reported []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "wrote "); ok {
			reported = append(reported, id)
			if len(reported) == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatalf("kill child: %v", err)
				}
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\n%s", err, stderr.Bytes())
	}
	if len(reported) < killAfter {
		t.Fatalf("child reported %d writes, want at least %d\n%s", len(reported), killAfter, stderr.Bytes())
	}

	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, id := range reported {
		if _, err := s.GetConversation(ctx, killOwner, id); err != nil {
			t.Fatalf("reported conversation %s: %v", id, err)
		}
		n, err := s.CountEvents(ctx, killOwner, event.Filter{ConversationID: id})
		if err != nil || n != 3 {
			t.Fatalf("reported conversation %s has %d events (%v), want 3", id, n, err)
		}
	}
	// Whatever was in flight is all or nothing: every stored conversation has its task and
	// first event.
	q := paging.Query{}
	stored := 0
	for {
		vs, next, err := s.ListConversations(ctx, killOwner, conversation.Filter{}, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			stored++
			if v.TaskStatus == "" {
				t.Fatalf("conversation %s stored without its start task", v.ID)
			}
			if n, err := s.CountEvents(ctx, killOwner, event.Filter{ConversationID: v.ID}); err != nil || n == 0 {
				t.Fatalf("conversation %s stored without its first event (%v)", v.ID, err)
			}
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	t.Logf("child reported %d writes before dying; %d conversations stored", len(reported), stored)
}

// killChild writes conversations (created with a task and an event, then given two more
// events) from several goroutines and reports each one once both writes returned. It never
// returns: the parent kills it, or it gives up after a minute.
func killChild(path string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	report := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "wrote %s\n", id) // os.Stdout is unbuffered: one write(2)
	}
	for w := range killWriters {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("conv-%d-%06d", w, i)
				if err := writeOne(ctx, s, id); err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					os.Exit(2)
				}
				report(id)
			}
		}()
	}
	time.Sleep(time.Minute)
	fmt.Fprintln(os.Stderr, "child: not killed in time")
	os.Exit(3)
}

func writeOne(ctx context.Context, s *sqlite.Store, id string) error {
	now := time.Now().UTC()
	c := conversation.Conversation{ID: id, OwnerID: killOwner, Version: conversation.V1, Title: id, CreatedAt: now, UpdatedAt: now}
	task := conversation.StartTask{ID: "task-" + id, Status: conversation.TaskWorking, CreatedAt: now, UpdatedAt: now}
	ev := func(n int) event.Event {
		return event.Event{
			ID: fmt.Sprintf("%s-ev-%d", id, n), Kind: "MessageEvent", Source: event.SourceUser, Timestamp: now,
			Body: json.RawMessage(`{"n":` + fmt.Sprint(n) + `}`),
		}
	}
	if err := s.CreateConversation(ctx, c, task, []event.Event{ev(0)}, conversation.Claim{}); err != nil {
		return err
	}
	more := []event.Event{ev(1), ev(2)}
	for i := range more {
		more[i].ConversationID = id
	}
	return s.AppendEvents(ctx, more)
}
