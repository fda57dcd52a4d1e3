package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/store/postgres"
	"github.com/agentd/agentd/internal/store/postgres/pgtest"
)

// killChildEnv, when set, makes the test binary the child of TestKillDurability: it writes
// through a store on the database at that URL until it is killed.
const killChildEnv = "AGENTD_POSTGRES_KILL_CHILD_DB"

const (
	killOwner   = "owner"
	killWriters = 4
	killRounds  = 12
)

// TestKillDurability: a replica killed with SIGKILL in the middle of its writes loses none it
// reported done and leaves none half-written, twelve times over, killed a little later each
// round: a child writes conversations (each with its task and first event, then two more
// events) from several goroutines and reports each once its writes returned; the parent kills
// it, then reads every reported conversation whole, and finds every stored one whole.
func TestKillDurability(t *testing.T) {
	if url := os.Getenv(killChildEnv); url != "" {
		killChild(url)
		return
	}
	url := pgtest.Database(t)
	s := open(t, url)
	ctx := t.Context()
	if err := s.CreateUser(ctx, auth.User{ID: killOwner, Name: killOwner, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	var reported []string
	for round := 1; round <= killRounds; round++ {
		reported = append(reported, killRound(t, url, round, round*15)...)
	}
	for _, id := range reported {
		if _, err := s.GetConversation(ctx, killOwner, id); err != nil {
			t.Fatalf("reported conversation %s: %v", id, err)
		}
		n, err := s.CountEvents(ctx, killOwner, event.Filter{ConversationID: id})
		if err != nil || n != 3 {
			t.Fatalf("reported conversation %s has %d events (%v), want 3", id, n, err)
		}
	}
	stored := 0
	q := paging.Query{}
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
	t.Logf("%d rounds: %d writes reported before the kills; %d conversations stored", killRounds, len(reported), stored)
}

// killRound starts a child that writes with the round's prefix, kills it once it reported
// after writes, and returns what it reported.
func killRound(t *testing.T, url string, round, after int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+url, fmt.Sprintf("AGENTD_KILL_ROUND=%d", round))
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
	var reported []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "wrote "); ok {
			reported = append(reported, id)
			if len(reported) == after {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatalf("kill child: %v", err)
				}
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: the child did not die of SIGKILL: %v\n%s", round, err, stderr.Bytes())
	}
	if len(reported) < after {
		t.Fatalf("round %d: the child reported %d writes, want at least %d\n%s", round, len(reported), after, stderr.Bytes())
	}
	return reported
}

// killChild writes conversations from several goroutines and reports each once its writes
// returned. It never returns: the parent kills it, or it gives up after a minute.
func killChild(url string) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		os.Exit(2)
	}
	round := os.Getenv("AGENTD_KILL_ROUND")
	var mu sync.Mutex
	report := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "wrote %s\n", id) // os.Stdout is unbuffered: one write(2)
	}
	for w := range killWriters {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("conv-%s-%d-%06d", round, w, i)
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

func writeOne(ctx context.Context, s *postgres.Store, id string) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := conversation.Conversation{ID: id, OwnerID: killOwner, Version: conversation.V1, Title: id,
		Tags: map[string]string{}, PRNumbers: []int{}, CreatedAt: now, UpdatedAt: now}
	task := conversation.StartTask{ID: "task-" + id, OwnerID: killOwner, ConversationID: id, Status: conversation.TaskWorking,
		Request: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now}
	ev := func(n int) event.Event {
		return event.Event{
			ID: fmt.Sprintf("%s-ev-%d", id, n), ConversationID: id, Kind: "MessageEvent", Source: event.SourceUser, Timestamp: now,
			Body: json.RawMessage(`{"n":` + fmt.Sprint(n) + `}`),
		}
	}
	if err := s.CreateConversation(ctx, c, task, []event.Event{ev(0)}, conversation.Claim{}); err != nil {
		return err
	}
	_, err := s.RecordEvents(ctx, id, []event.Event{ev(1), ev(2)}, conversation.StateUpdate{ExecutionStatus: "running", UpdatedAt: now})
	return err
}
