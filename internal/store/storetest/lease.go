package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// leaseTTL is the lease of the tests that do not wait for one to lapse.
const leaseTTL = time.Hour

// waitExpired claims conv for holder until the claim succeeds, which it does once the lease
// that another holds with a short ttl has lapsed: bounded, so that a lease that never lapses
// fails the test.
func waitExpired(t *testing.T, s store.Store, conv, holder, node string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := s.ClaimConversation(t.Context(), conv, holder, node, leaseTTL)
		ok(t, "claim", err)
		if got {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of %s did not lapse within a minute", conv)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLeases: a lease goes to the first holder and to no other while it lives; its holder
// claims it again and renews it; it lapses at its expiry, and then another takes it; a
// release frees it, only by its holder; the leases of a node's earlier run go at once. A
// conversation created under a lease has it from its creation, as if claimed then; one that
// fails to be created leaves none.
func testLeases(t *testing.T, s store.Store) {
	ctx := t.Context()
	born := newConversation(ownerA, "conv-born-held", 3)
	ok(t, "create under a lease", s.CreateConversation(ctx, born, newTask(born), nil,
		conversation.Claim{Holder: "a/1", Node: "a", TTL: leaseTTL}))
	bl, err := s.ConversationLease(ctx, born.ID)
	ok(t, "lease", err)
	if bl.Holder != "a/1" || bl.Node != "a" || time.Until(bl.Expires) < leaseTTL/2 {
		t.Fatalf("lease of a conversation created under one: %+v", bl)
	}
	if got, err := s.ClaimConversation(ctx, born.ID, "b/1", "b", leaseTTL); err != nil || got {
		t.Fatalf("another holder's claim of a conversation created under a lease: %v, %v", got, err)
	}
	again := born
	again.OwnerID = ownerB
	is(t, "create again under another lease", s.CreateConversation(ctx, again, conversation.StartTask{}, nil,
		conversation.Claim{Holder: "b/1", Node: "b", TTL: leaseTTL}), conversation.ErrExists)
	bl, err = s.ConversationLease(ctx, born.ID)
	ok(t, "lease", err)
	equal(t, "holder after a failed creation", bl.Holder, "a/1")
	ok(t, "release", s.ReleaseConversation(ctx, born.ID, "a/1"))

	c := newConversation(ownerA, "conv-lease", 1)
	createConversation(t, s, c)
	other := newConversation(ownerA, "conv-other", 2)
	createConversation(t, s, other)

	_, err = s.ClaimConversation(ctx, "no-such-conversation", "a/1", "a", leaseTTL)
	is(t, "claim of a conversation that does not exist", err, conversation.ErrNotFound)
	l, err := s.ConversationLease(ctx, c.ID)
	ok(t, "lease", err)
	equal(t, "lease of a conversation nobody claimed", l, conversation.Lease{})

	claim := func(conv, holder, node string, ttl time.Duration) bool {
		t.Helper()
		got, err := s.ClaimConversation(ctx, conv, holder, node, ttl)
		ok(t, "claim", err)
		return got
	}
	if !claim(c.ID, "a/1", "a", leaseTTL) {
		t.Fatal("a free lease was not claimed")
	}
	if claim(c.ID, "b/1", "b", leaseTTL) {
		t.Fatal("a live lease went to another holder")
	}
	if !claim(c.ID, "a/1", "a", leaseTTL) {
		t.Fatal("its holder could not claim its own lease again")
	}
	l, err = s.ConversationLease(ctx, c.ID)
	ok(t, "lease", err)
	if l.Holder != "a/1" || l.Node != "a" || time.Until(l.Expires) < leaseTTL/2 {
		t.Fatalf("lease %+v", l)
	}
	ok(t, "release by another", s.ReleaseConversation(ctx, c.ID, "b/1"))
	if claim(c.ID, "b/1", "b", leaseTTL) {
		t.Fatal("a release by another holder freed the lease")
	}
	ok(t, "release", s.ReleaseConversation(ctx, c.ID, "a/1"))
	if !claim(c.ID, "b/1", "b", time.Millisecond) {
		t.Fatal("a released lease was not claimed")
	}
	waitExpired(t, s, c.ID, "a/1", "a")

	// Renewal keeps a lease alive and reports what the holder still has.
	if !claim(other.ID, "a/1", "a", time.Millisecond) {
		t.Fatal("claim")
	}
	held, err := s.RenewLeases(ctx, "a/1", leaseTTL)
	ok(t, "renew", err)
	slices.Sort(held)
	equal(t, "leases renewed", held, []string{c.ID, other.ID})
	if claim(other.ID, "b/1", "b", leaseTTL) {
		t.Fatal("a renewed lease went to another holder")
	}
	held, err = s.RenewLeases(ctx, "b/1", leaseTTL)
	ok(t, "renew", err)
	equal(t, "leases of a holder that lost them", len(held), 0)

	// A node's replica that starts again frees its earlier run's leases, and only those.
	n, err := s.ReleaseNodeLeases(ctx, "a", "a/2")
	ok(t, "release the node's leases", err)
	equal(t, "leases of the node's earlier run", n, 2)
	if !claim(c.ID, "b/1", "b", leaseTTL) {
		t.Fatal("a lease of a node's earlier run was not freed")
	}
	n, err = s.ReleaseNodeLeases(ctx, "b", "b/1")
	ok(t, "release the node's leases", err)
	equal(t, "leases of the current run", n, 0)
}

// testLeaseFencing: an append that names a holder is written only while that holder has the
// lease; once another has it, it fails with ErrLeaseLost and writes nothing; once the
// conversation is deleted, with ErrNotFound.
func testLeaseFencing(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-fence", 1)
	createConversation(t, s, c)
	record := func(holder string, n int) error {
		_, err := s.RecordEvents(ctx, c.ID, []event.Event{newEvent(c.ID, fmt.Sprintf("e-%d", n), n)},
			conversation.StateUpdate{ExecutionStatus: "running", Holder: holder})
		return err
	}
	is(t, "an append by a holder without a lease", record("a/1", 1), conversation.ErrLeaseLost)
	got, err := s.ClaimConversation(ctx, c.ID, "a/1", "a", time.Millisecond)
	ok(t, "claim", err)
	equal(t, "claimed", got, true)
	ok(t, "an append by the holder", record("a/1", 2))
	waitExpired(t, s, c.ID, "b/1", "b")
	is(t, "an append by the holder that lost the lease", record("a/1", 3), conversation.ErrLeaseLost)
	ok(t, "an append by the new holder", record("b/1", 4))
	ok(t, "an append that names no holder", record("", 5))
	evs, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "events", err)
	equal(t, "events written", ids(evs, func(e event.Event) string { return e.ID }), []string{"e-2", "e-4", "e-5"})
	v, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get conversation", err)
	equal(t, "status", v.ExecutionStatus, "running")
	// A conversation deleted while its agent runs: the holder's append finds it gone.
	ok(t, "delete conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	is(t, "an append by the holder after the deletion", record("b/1", 6), conversation.ErrNotFound)
}

// testLeaseClaimRace: of holders claiming one free lease at once, exactly one gets it.
func testLeaseClaimRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-race", 1)
	createConversation(t, s, c)
	const holders = 8
	var wg sync.WaitGroup
	won := make([]bool, holders)
	for i := range holders {
		wg.Go(func() {
			got, err := s.ClaimConversation(ctx, c.ID, fmt.Sprintf("h/%d", i), "h", leaseTTL)
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			won[i] = got
		})
	}
	wg.Wait()
	winners := 0
	for _, w := range won {
		if w {
			winners++
		}
	}
	equal(t, "holders that got the lease", winners, 1)
}

// testUnowned: the conversations that need a runner (agent running, start task unfinished,
// messages or commands waiting) and have no live lease, with their sandbox's node and
// backend; none that has a live lease, and none that needs nothing.
func testUnowned(t *testing.T, s store.Store) {
	ctx := t.Context()
	sb := newSandbox(ownerA, "sb-u", 1, sandbox.StatusRunning)
	ok(t, "create sandbox", s.CreateSandbox(ctx, sb, 0))
	mk := func(id string, i int) conversation.Conversation {
		c := newConversation(ownerA, id, i)
		task := createConversation(t, s, c)
		task.Status = conversation.TaskReady
		ok(t, "task ready", s.UpdateStartTask(ctx, task))
		return c
	}
	running := mk("c1-running", 1)
	running.SandboxID = sb.ID
	ok(t, "set sandbox", s.UpdateConversation(ctx, running))
	ok(t, "running", recordEvents(s, ctx, running.ID, nil, conversation.StateUpdate{ExecutionStatus: "running"}))
	starting := newConversation(ownerA, "c2-starting", 2)
	task := createConversation(t, s, starting) // its task is WORKING
	task.SandboxID = sb.ID
	ok(t, "task's sandbox", s.UpdateStartTask(ctx, task))
	// Messages queue while the conversation starts; a restart between READY and their
	// delivery leaves them waiting (the task below is READY by then).
	pending := newConversation(ownerA, "c3-pending", 3)
	ptask := createConversation(t, s, pending)
	_, err := s.AddPendingMessage(ctx, ownerA, conversation.PendingMessage{ID: "pm", ConversationID: pending.ID,
		Message: conversation.Message{Text: "hi"}, CreatedAt: at(3)}, 10)
	ok(t, "queue", err)
	ptask.Status = conversation.TaskReady
	ok(t, "task ready", s.UpdateStartTask(ctx, ptask))
	commanded := mk("c4-commanded", 4)
	idle := mk("c5-idle", 5)
	ok(t, "idle", recordEvents(s, ctx, idle.ID, nil, conversation.StateUpdate{ExecutionStatus: "finished"}))
	held := mk("c6-held", 6)
	ok(t, "running", recordEvents(s, ctx, held.ID, nil, conversation.StateUpdate{ExecutionStatus: "running"}))
	got, err := s.ClaimConversation(ctx, held.ID, "a/1", "a", leaseTTL)
	ok(t, "claim", err)
	equal(t, "claimed", got, true)
	// A conversation created under its creator's lease is never without one: its start task
	// (WORKING) needs a runner, and has it.
	created := newConversation(ownerA, "c7-created-held", 7)
	ok(t, "create under a lease", s.CreateConversation(ctx, created, newTask(created), nil,
		conversation.Claim{Holder: "a/1", Node: "a", TTL: leaseTTL}))
	// A command for a conversation whose holder's lease lapsed stays for the next holder.
	got, err = s.ClaimConversation(ctx, commanded.ID, "a/1", "a", leaseTTL)
	ok(t, "claim", err)
	equal(t, "claimed", got, true)
	holder, err := s.AddCommand(ctx, commanded.ID, conversation.CommandRun, "b/1")
	ok(t, "add command", err)
	equal(t, "holder told", holder, "a/1")
	ok(t, "release", s.ReleaseConversation(ctx, commanded.ID, "a/1"))

	us, err := s.UnownedConversations(ctx, 100)
	ok(t, "unowned", err)
	want := []conversation.Unowned{
		{ID: running.ID, OwnerID: ownerA, Node: sb.Node, Backend: sb.Backend},
		{ID: starting.ID, OwnerID: ownerA, Node: sb.Node, Backend: sb.Backend},
		{ID: pending.ID, OwnerID: ownerA},
		{ID: commanded.ID, OwnerID: ownerA},
	}
	equal(t, "unowned conversations", us, want)
	us, err = s.UnownedConversations(ctx, 2)
	ok(t, "unowned", err)
	equal(t, "the first two", us, want[:2])
}

// testCommands: a command is left only for another holder with a live lease, which takes its
// commands in order, once; a claim after that holder's lease lapsed takes them over; deleting
// the conversation removes its lease and commands.
func testCommands(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-cmd", 1)
	createConversation(t, s, c)
	_, err := s.AddCommand(ctx, "no-such-conversation", conversation.CommandRun, "b/1")
	is(t, "command for a conversation that does not exist", err, conversation.ErrNotFound)
	holder, err := s.AddCommand(ctx, c.ID, conversation.CommandRun, "b/1")
	ok(t, "command without a lease", err)
	equal(t, "holder of a conversation nobody holds", holder, "")
	us, err := s.UnownedConversations(ctx, 10)
	ok(t, "unowned", err)
	equal(t, "a conversation with a command waiting", ids(us, func(u conversation.Unowned) string { return u.ID }), []string{c.ID})
	got, err := s.ClaimConversation(ctx, c.ID, "a/1", "a", time.Millisecond)
	ok(t, "claim", err)
	equal(t, "claimed", got, true)
	// Renewed for long enough to take the commands below, then left to lapse.
	_, err = s.RenewLeases(ctx, "a/1", leaseTTL)
	ok(t, "renew", err)
	holder, err = s.AddCommand(ctx, c.ID, conversation.CommandRun, "a/1")
	ok(t, "command by the holder", err)
	equal(t, "holder of a command the holder leaves", holder, "")
	for _, k := range []string{conversation.CommandRun, conversation.CommandPause} {
		holder, err = s.AddCommand(ctx, c.ID, k, "b/1")
		ok(t, "command", err)
		equal(t, "holder told", holder, "a/1")
	}
	cmds, err := s.TakeCommands(ctx, "b/1")
	ok(t, "take commands of another", err)
	equal(t, "commands of a holder without the lease", len(cmds), 0)
	cmds, err = s.TakeCommands(ctx, "a/1")
	ok(t, "take commands", err)
	equal(t, "commands", cmds, []conversation.Command{
		{ConversationID: c.ID, OwnerID: ownerA, Kind: conversation.CommandRun},
		{ConversationID: c.ID, OwnerID: ownerA, Kind: conversation.CommandRun},
		{ConversationID: c.ID, OwnerID: ownerA, Kind: conversation.CommandRun},
		{ConversationID: c.ID, OwnerID: ownerA, Kind: conversation.CommandPause}})
	cmds, err = s.TakeCommands(ctx, "a/1")
	ok(t, "take commands", err)
	equal(t, "commands taken twice", len(cmds), 0)

	holder, err = s.AddCommand(ctx, c.ID, conversation.CommandPause, "b/1")
	ok(t, "command", err)
	equal(t, "holder told", holder, "a/1")
	_, err = s.RenewLeases(ctx, "a/1", time.Millisecond)
	ok(t, "renew", err)
	waitExpired(t, s, c.ID, "b/1", "b")
	cmds, err = s.TakeCommands(ctx, "b/1")
	ok(t, "take commands", err)
	equal(t, "commands taken over with the lease", cmds, []conversation.Command{{ConversationID: c.ID, OwnerID: ownerA, Kind: conversation.CommandPause}})

	_, err = s.AddCommand(ctx, c.ID, conversation.CommandRun, "a/1")
	ok(t, "command", err)
	ok(t, "delete conversation", s.DeleteConversation(ctx, ownerA, c.ID))
	l, err := s.ConversationLease(ctx, c.ID)
	ok(t, "lease", err)
	equal(t, "lease of a deleted conversation", l, conversation.Lease{})
	us, err = s.UnownedConversations(ctx, 10)
	ok(t, "unowned", err)
	equal(t, "work left by a deleted conversation", len(us), 0)
}

// testSecretsRevision: a user's secrets revision starts at 0 and goes up by one at each bump,
// for that user alone, bumps racing included.
func testSecretsRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	rev, err := s.SecretsRevision(ctx, ownerA)
	ok(t, "revision", err)
	equal(t, "revision before any change", rev, int64(0))
	const bumps = 8
	var wg sync.WaitGroup
	for range bumps {
		wg.Go(func() {
			if err := s.BumpSecretsRevision(ctx, ownerA); err != nil {
				t.Errorf("bump: %v", err)
			}
		})
	}
	wg.Wait()
	rev, err = s.SecretsRevision(ctx, ownerA)
	ok(t, "revision", err)
	equal(t, "revision after the bumps", rev, int64(bumps))
	rev, err = s.SecretsRevision(ctx, ownerB)
	ok(t, "revision", err)
	equal(t, "another user's revision", rev, int64(0))
}

// testReplicas: a replica's node is live while its heartbeat lives, and gone when it lapses
// or the replica is removed.
func testReplicas(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1 := conversation.Replica{ID: "a/1", Node: "a", Keys: []string{"k1", "k2"}, ActiveKey: "k1"}
	ok(t, "heartbeat", s.Heartbeat(ctx, a1, leaseTTL))
	ok(t, "heartbeat", s.Heartbeat(ctx, conversation.Replica{ID: "a/2", Node: "a"}, leaseTTL))
	ok(t, "heartbeat", s.Heartbeat(ctx, conversation.Replica{ID: "b/1", Node: "b"}, time.Millisecond))
	rs, err := s.LiveReplicas(ctx)
	ok(t, "live replicas", err)
	if len(rs) == 0 || !slices.ContainsFunc(rs, func(r conversation.Replica) bool { return r.ID == "a/1" }) {
		t.Fatalf("live replicas %+v", rs)
	}
	equal(t, "a replica's keys", rs[0], a1)
	a1.Keys, a1.ActiveKey = []string{"k2"}, "k2"
	ok(t, "heartbeat", s.Heartbeat(ctx, a1, leaseTTL))
	rs, err = s.LiveReplicas(ctx)
	ok(t, "live replicas", err)
	equal(t, "a replica's keys after a heartbeat", rs[0], a1)
	liveNodes := func() ([]string, error) {
		rs, err := s.LiveReplicas(ctx)
		var nodes []string
		for _, r := range rs {
			if !slices.Contains(nodes, r.Node) {
				nodes = append(nodes, r.Node)
			}
		}
		return nodes, err
	}
	nodes, err := liveNodes()
	ok(t, "live nodes", err)
	if !slices.Contains(nodes, "a") {
		t.Fatalf("live nodes %v lack a", nodes)
	}
	deadline := time.Now().Add(time.Minute)
	for slices.Contains(nodes, "b") {
		if time.Now().After(deadline) {
			t.Fatal("a lapsed heartbeat still counts after a minute")
		}
		time.Sleep(5 * time.Millisecond)
		nodes, err = liveNodes()
		ok(t, "live nodes", err)
	}
	equal(t, "live nodes", nodes, []string{"a"})
	ok(t, "remove", s.RemoveReplica(ctx, "a/1"))
	nodes, err = liveNodes()
	ok(t, "live nodes", err)
	equal(t, "live nodes after one of two replicas left", nodes, []string{"a"})
	ok(t, "remove", s.RemoveReplica(ctx, "a/2"))
	nodes, err = liveNodes()
	ok(t, "live nodes", err)
	equal(t, "live nodes after both left", len(nodes), 0)
}

// testRecordIfStatus: an append conditional on the agent's status is written only while the
// status is the one it names; of answers racing for one pending action (each moving the
// status on), one is written.
func testRecordIfStatus(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-cas", 1)
	createConversation(t, s, c)
	waiting, idle := "waiting_for_confirmation", "idle"
	ok(t, "record", recordEvents(s, ctx, c.ID, nil, conversation.StateUpdate{ExecutionStatus: waiting}))
	_, err := s.RecordEvents(ctx, c.ID, []event.Event{newEvent(c.ID, "wrong", 1)},
		conversation.StateUpdate{ExecutionStatus: idle, IfStatus: &idle})
	is(t, "an append made for another status", err, conversation.ErrStatusChanged)
	const answers = 6
	var wg sync.WaitGroup
	errs := make([]error, answers)
	for i := range answers {
		wg.Go(func() {
			_, errs[i] = s.RecordEvents(ctx, c.ID, []event.Event{newEvent(c.ID, fmt.Sprintf("answer-%d", i), i)},
				conversation.StateUpdate{ExecutionStatus: idle, IfStatus: &waiting})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			is(t, "an answer that lost", err, conversation.ErrStatusChanged)
		}
	}
	equal(t, "answers written", won, 1)
	evs, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "events", err)
	equal(t, "events written", len(evs), 1)
}

// testRecordIfSecretsRevision: an append conditional on the owner's secrets revision is
// written only while the revision is the one it names, with or without the lease condition;
// another user's revision does not count, and a conversation that does not exist is not
// found whatever the revision.
func testRecordIfSecretsRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := newConversation(ownerA, "conv-rev", 1)
	ok(t, "create under a lease", s.CreateConversation(ctx, c, newTask(c), nil,
		conversation.Claim{Holder: "r1", Node: "a", TTL: leaseTTL}))
	zero, one := int64(0), int64(1)
	ok(t, "record at revision 0", recordEvents(s, ctx, c.ID, []event.Event{newEvent(c.ID, "rev-0", 1)},
		conversation.StateUpdate{ExecutionStatus: "running", IfSecretsRevision: &zero}))
	ok(t, "bump B", s.BumpSecretsRevision(ctx, ownerB))
	ok(t, "record held at revision 0 after B's bump", recordEvents(s, ctx, c.ID, []event.Event{newEvent(c.ID, "rev-0b", 2)},
		conversation.StateUpdate{Holder: "r1", IfSecretsRevision: &zero}))
	ok(t, "bump A", s.BumpSecretsRevision(ctx, ownerA))
	for _, holder := range []string{"", "r1"} {
		err := recordEvents(s, ctx, c.ID, []event.Event{newEvent(c.ID, "stale-"+holder, 3)},
			conversation.StateUpdate{ExecutionStatus: "idle", Holder: holder, IfSecretsRevision: &zero})
		is(t, "an append masked for the revision before the bump (holder "+holder+")", err, conversation.ErrSecretsRevised)
	}
	got, err := s.GetConversation(ctx, ownerA, c.ID)
	ok(t, "get", err)
	equal(t, "status after the refused appends", got.ExecutionStatus, "running")
	ok(t, "record held at revision 1", recordEvents(s, ctx, c.ID, []event.Event{newEvent(c.ID, "rev-1", 4)},
		conversation.StateUpdate{Holder: "r1", IfSecretsRevision: &one}))
	evs, err := s.ConversationEvents(ctx, c.ID, 0)
	ok(t, "events", err)
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	equal(t, "events written", ids, []string{"rev-0", "rev-0b", "rev-1"})
	err = recordEvents(s, ctx, "conv-missing", []event.Event{newEvent("conv-missing", "none", 5)},
		conversation.StateUpdate{IfSecretsRevision: &one})
	is(t, "an append to no conversation", err, conversation.ErrNotFound)
}
