package listingcache

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
)

// TestCacheKeepsItsBudget: the least recently used rows go first, the cache never holds more
// than its budget, a row larger than it is not kept, and a task is kept at one version only.
func TestCacheKeepsItsBudget(t *testing.T) {
	ev := func(seq int64, body int) event.Event {
		return event.Event{Seq: seq, ID: fmt.Sprint("e", seq), Body: []byte(strings.Repeat("b", body))}
	}
	one := eventCost(new(ev(1, 100)))
	c := New(int64(3 * one))
	for seq := int64(1); seq <= 3; seq++ {
		Events.Keep(c, ev(seq, 100), 0)
	}
	if _, ok := Events.Cached(c, Version[int64]{Key: 1}); !ok { // 1 is now the most recently used
		t.Fatal("event 1 not kept")
	}
	Events.Keep(c, ev(4, 100), 0)
	if _, ok := Events.Cached(c, Version[int64]{Key: 2}); ok {
		t.Fatal("event 2, the least recently used, was kept beyond the budget")
	}
	for _, seq := range []int64{1, 3, 4} {
		if _, ok := Events.Cached(c, Version[int64]{Key: seq}); !ok {
			t.Fatalf("event %d not kept", seq)
		}
	}
	if c.size > c.budget || c.Len() != 3 {
		t.Fatalf("%d rows of %d bytes in a budget of %d", c.Len(), c.size, c.budget)
	}
	Events.Keep(c, ev(5, 4*one), 0)
	if _, ok := Events.Cached(c, Version[int64]{Key: 5}); ok || c.Len() != 3 {
		t.Fatalf("an event larger than the budget was kept (%d rows)", c.Len())
	}
	at := time.Unix(1_700_000_000, 0)
	task := conversation.StartTask{ID: "t1", Status: conversation.TaskWorking, CreatedAt: at}
	Tasks.Keep(c, task, 0)
	task.Status = conversation.TaskReady
	Tasks.Keep(c, task, 1)
	if _, ok := Tasks.Cached(c, Version[string]{Key: "t1", Created: TimeKey(at), Rev: 0}); ok {
		t.Fatal("the task's older version is still kept")
	}
	if got, ok := Tasks.Cached(c, Version[string]{Key: "t1", Created: TimeKey(at), Rev: 1}); !ok || got.Status != conversation.TaskReady {
		t.Fatalf("the task's newer version: %+v, %v", got, ok)
	}
	if _, ok := Tasks.Cached(c, Version[string]{Key: "t1", Created: TimeKey(at) + 1, Rev: 1}); ok {
		t.Fatal("a task created at another time was taken for the kept one")
	}
	if c.size > c.budget || c.Len() != 3 {
		t.Fatalf("%d rows of %d bytes in a budget of %d", c.Len(), c.size, c.budget)
	}
	if New(0) != nil || New(-1) != nil {
		t.Fatal("a cache without a budget is not nil")
	}
	var off *Cache
	Events.Keep(off, ev(1, 1), 0)
	Tasks.Keep(off, task, 1)
	if _, ok := Events.Cached(off, Version[int64]{Key: 1}); ok || off.Len() != 0 {
		t.Fatal("a nil cache kept an event")
	}
}

// TestAt: rows come in the versions' order, those the cache holds at their version from it,
// the others from one read of their keys alone, which the cache then holds; a row the read
// does not return is left out.
func TestAt(t *testing.T) {
	c := New(1 << 20)
	at := time.Unix(1_700_000_000, 0)
	task := func(id string, status conversation.TaskStatus) conversation.StartTask {
		return conversation.StartTask{ID: id, Status: status, CreatedAt: at}
	}
	Tasks.Keep(c, task("t1", conversation.TaskWorking), 1)
	Tasks.Keep(c, task("t2", conversation.TaskWorking), 1)
	v := func(id string, rev int64) Version[string] {
		return Version[string]{Key: id, Created: TimeKey(at), Rev: rev}
	}
	var asked [][]string
	read := func(keys []string) ([]Read[conversation.StartTask], error) {
		asked = append(asked, keys)
		var out []Read[conversation.StartTask]
		for _, k := range keys {
			if k != "gone" {
				out = append(out, Read[conversation.StartTask]{Row: task(k, conversation.TaskReady), Rev: 2})
			}
		}
		return out, nil
	}
	got, err := Tasks.At(c, []Version[string]{v("t3", 2), v("t1", 1), v("gone", 2), v("t2", 2)}, read)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range got {
		ids = append(ids, tk.ID+":"+string(tk.Status))
	}
	if strings.Join(ids, " ") != "t3:READY t1:WORKING t2:READY" || fmt.Sprint(asked) != "[[t3 gone t2]]" {
		t.Fatalf("got %v, read %v", ids, asked)
	}
	asked = nil
	if _, err := Tasks.At(c, []Version[string]{v("t3", 2), v("t2", 2)}, read); err != nil || asked != nil {
		t.Fatalf("read %v (%v) for rows the cache holds", asked, err)
	}
}

// TestClearFreesItsTable: once cleared, the cache holds no more of the heap than before it
// was filled; a cleared map would keep its table.
func TestClearFreesItsTable(t *testing.T) {
	c := New(1 << 30)
	before := liveHeap()
	for i := range 100_000 {
		c.Put(&Entry{Key: Key{Kind: KindEvent, Seq: int64(i)}, Cost: 1})
	}
	full := liveHeap()
	c.Clear()
	after := liveHeap()
	// The table alone of 100,000 entries is a few MB; what other goroutines allocate meanwhile
	// is far less.
	if grown := after - before; grown > (full-before)/4 {
		t.Fatalf("the cleared cache holds %d bytes more than the empty one; full, it held %d more", grown, full-before)
	}
	runtime.KeepAlive(c)
}

// liveHeap returns the bytes of the heap live after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestCostsAreTheHeap: what the cache counts of its budget for a row is what the entry holds
// of the heap, within a fifth (allocations are rounded up to Go's size classes), so that the
// budget bounds the memory.
func TestCostsAreTheHeap(t *testing.T) {
	id := func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i) }
	for _, tc := range []struct {
		name string
		keep func(c *Cache, i int) int // keeps row i and returns its cost
	}{
		{"conversation", func(c *Cache, i int) int { v := listedView(i); Conversations.Keep(c, v, 1); return viewCost(&v) }},
		{"bare conversation", func(c *Cache, i int) int {
			v := conversation.View{Conversation: conversation.Conversation{ID: id(i)}}
			Conversations.Keep(c, v, 1)
			return viewCost(&v)
		}},
		{"start task", func(c *Cache, i int) int {
			tk := conversation.StartTask{ID: id(i), OwnerID: id(i + 1), ConversationID: id(i + 2), Status: conversation.TaskReady, SandboxID: id(i + 3),
				AgentServerURL: "http://127.0.0.1:8000/" + id(i), Request: []byte(strings.Repeat("r", 300+i%2)), CreatedAt: time.Unix(int64(i), 0)}
			Tasks.Keep(c, tk, 1)
			return taskCost(&tk)
		}},
		{"sandbox", func(c *Cache, i int) int {
			sb := sandbox.Sandbox{ID: id(i), OwnerID: id(i + 1), SpecID: "default", Backend: "process", Node: "node-" + id(i), Status: sandbox.StatusMissing,
				Detail: "the sandbox's processes are gone", CreatedAt: time.Unix(int64(i), 0)}
			Sandboxes.Keep(c, sb, 1)
			return sandboxCost(&sb)
		}},
		{"event", func(c *Cache, i int) int {
			e := event.Event{Seq: int64(i), ID: id(i), ConversationID: id(i + 1), Kind: "MessageEvent", Source: "agent", Body: []byte(strings.Repeat("b", 600+i%2))}
			Events.Keep(c, e, 0)
			return eventCost(&e)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 10_000
			c := New(1 << 30)
			before := liveHeap()
			cost := 0
			for i := range n {
				cost += tc.keep(c, i)
			}
			held := liveHeap() - before
			runtime.KeepAlive(c)
			t.Logf("%d rows: %d bytes of the heap a row, counted as %d", n, held/n, cost/n)
			if d := int64(cost) - held; d > held/5 || -d > held/5 {
				t.Fatalf("%d rows hold %d bytes of the heap, counted as %d", n, held, cost)
			}
		})
	}
}

// listedView is a conversation as a listing reads it (with metrics, a sandbox and a start
// task), with new strings and slices of its own.
func listedView(i int) conversation.View {
	id := func(prefix string) string { return fmt.Sprintf("%s%08d-0000-4000-8000-%012d", prefix, i, i) }
	p := func(s string) *string { return &s }
	return conversation.View{
		Conversation: conversation.Conversation{
			ID: id(""), OwnerID: id("u"), SandboxID: id("s"), Version: conversation.V1, Title: fmt.Sprintf("Conversation %d", i),
			SelectedRepository: p("acme/api"), SelectedBranch: p("main"), GitProvider: p("github"), LLMModel: p("gpt-4o"),
			PRNumbers: []int{i}, Metrics: []byte(fmt.Sprintf(`{"accumulated_cost":0.%d,"accumulated_token_usage":{"prompt_tokens":%d,"completion_tokens":20}}`, i, i)),
			SecretNames: []string{"API_TOKEN"}, SecretsSealed: []byte(strings.Repeat("s", 60+i%2)), Tags: map[string]string{"source": "api"},
			ExecutionStatus: "finished", CreatedAt: time.Unix(int64(i), 0), UpdatedAt: time.Unix(int64(i), 0),
		},
		SandboxStatus: sandbox.StatusRunning, TaskStatus: conversation.TaskReady, SandboxKeySealed: []byte(strings.Repeat("k", 60+i%2)),
	}
}
