package conversation

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/agent"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// This replica's part in the ownership of conversations (lease.go): it claims the lease of a
// conversation before it runs its start task or its agent loop, renews its leases while they
// run and releases each once neither runs; it takes over the conversations that need a
// runner and whose lease lapsed (their holder died), as far as it reaches their sandbox; and
// it acts on the commands other replicas leave for the conversations it holds.

// DefaultLeaseTTL is how long a lease lives without renewal: the time another replica waits
// before it takes over a dead replica's conversations. Renewed every third of it, a lease
// lives through two missed renewals (a pause of the process, a slow database) before another
// replica may take it.
const DefaultLeaseTTL = 10 * time.Second

// unownedBatch bounds the conversations one pass takes over.
const unownedBatch = 100

// waitHolderPrefix begins the holder of the lease a replica takes of a conversation that
// waits for its node: it names the conversation as waiting (so that the others do not say so
// again) and lapses with the lease time, or when the node's replica starts.
const waitHolderPrefix = "wait/"

// passInterval is how often the replica looks for conversations to take over and commands to
// act on (beside the wake-ups): a tenth of the lease, within [100 ms, 1 s], so that a
// takeover comes within about a second of the lapse; a third of it for a replica alone on its
// store, which only renews.
func (s *Service) passInterval() time.Duration {
	if s.o.Alone {
		return s.o.LeaseTTL / 3
	}
	return min(max(s.o.LeaseTTL/10, 100*time.Millisecond), time.Second)
}

// Replica is this replica's id: the holder its leases name.
func (s *Service) Replica() string { return s.o.Replica }

// claim takes the conversation's lease for this replica, or renews it if it is this
// replica's already.
func (s *Service) claim(ctx context.Context, convID string) (bool, error) {
	return s.o.Store.ClaimConversation(ctx, convID, s.o.Replica, s.o.Node, s.o.LeaseTTL)
}

// wake makes the conversation's agent run: here when this replica has or takes its lease and
// reaches its sandbox, else by a command for its holder (or for whoever takes it next).
func (s *Service) wake(ctx context.Context, ownerID string, c Conversation) error {
	if s.running(c.ID) == nil && !s.reaches(ctx, c) {
		return s.command(ctx, c.ID, CommandRun)
	}
	started, err := s.runHere(ctx, ownerID, c.ID)
	if err != nil {
		return fmt.Errorf("run conversation %s: %w", c.ID, err)
	}
	if !started {
		return s.command(ctx, c.ID, CommandRun)
	}
	return nil
}

// runHere runs the conversation's agent on this replica: a loop that runs here is asked to
// look again; else the lease is claimed (or renewed) and a loop started under it. It reports
// false when another replica holds the lease.
func (s *Service) runHere(ctx context.Context, ownerID, convID string) (bool, error) {
	defer s.lockLease(convID)()
	if s.running(convID) != nil {
		s.startLoop(ownerID, convID)
		return true, nil
	}
	claimed, err := s.claim(ctx, convID)
	if err != nil || !claimed {
		return false, err
	}
	s.startLoop(ownerID, convID)
	return true, nil
}

// lockLease takes the conversation's stripe of leaseMu and returns its unlock.
func (s *Service) lockLease(convID string) func() {
	h := fnv.New32a()
	h.Write([]byte(convID))
	mu := &s.leaseMu[h.Sum32()%uint32(len(s.leaseMu))]
	mu.Lock()
	return mu.Unlock
}

// command leaves a command for the conversation's runner and wakes its holder, if it has
// one; a conversation nobody holds now is taken, commands and all, by the next pass of a
// replica that reaches its sandbox.
func (s *Service) command(ctx context.Context, convID, kind string) error {
	holder, err := s.o.Store.AddCommand(ctx, convID, kind, s.o.Replica)
	if err != nil {
		return err
	}
	if holder != "" {
		s.waker.Wake(holder)
	}
	return nil
}

// reaches reports whether this replica can run the conversation: its sandbox (or its start
// task's) is on this node, or on a backend every replica reaches, or it has none yet.
func (s *Service) reaches(ctx context.Context, c Conversation) bool {
	if c.SandboxID == "" {
		return true
	}
	sb, err := s.o.Sandboxes.Get(ctx, c.OwnerID, c.SandboxID)
	if err != nil {
		return true // gone: whoever runs it says so
	}
	return s.o.Sandboxes.Reaches(sb.Node, sb.Backend)
}

// settled is settle for a task or loop that has just ended, which counted itself in
// s.settling when it left s.tasks or s.loops.
func (s *Service) settled(convID string) {
	s.settle(convID)
	s.mu.Lock()
	s.settling--
	s.mu.Unlock()
}

// settle releases the conversation's lease once neither its start task nor its agent loop
// runs here. A command left meanwhile makes it work again, which the next pass takes.
func (s *Service) settle(convID string) {
	defer s.lockLease(convID)()
	s.mu.Lock()
	_, task := s.tasks[convID]
	_, loop := s.loops[convID]
	s.mu.Unlock()
	if task || loop {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.o.Store.ReleaseConversation(ctx, convID, s.o.Replica); err != nil {
		s.log.Warn("release the lease of a conversation", "conversation_id", convID, "err", err)
	}
}

// own runs the replica's side of ownership until ctx ends: renewals, commands, takeovers.
func (s *Service) own(ctx context.Context) {
	tick := time.NewTicker(s.passInterval())
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.waker.Wakeups():
		}
		if time.Since(renewed) >= s.o.LeaseTTL/3 {
			s.heartbeat(ctx)
			if s.Busy() || !s.o.Alone {
				s.renew(ctx)
			}
			renewed = time.Now()
		}
		s.takeCommands(ctx)
		s.takeOver(ctx)
	}
}

// heartbeat says that this replica lives, for the others to know that its node's
// conversations have a runner.
func (s *Service) heartbeat(ctx context.Context) {
	if s.o.Alone {
		return
	}
	r := Replica{ID: s.o.Replica, Node: s.o.Node}
	if s.o.Keys != nil {
		r.Keys, r.ActiveKey = s.o.Keys()
	}
	if err := s.o.Store.Heartbeat(ctx, r, s.o.LeaseTTL); err != nil && ctx.Err() == nil {
		s.log.Warn("heartbeat", "err", err)
	}
}

// renew renews this replica's leases and stops what runs here for a conversation whose lease
// another replica took: its appends would fail anyway (StateUpdate.Holder).
func (s *Service) renew(ctx context.Context) {
	held, err := s.o.Store.RenewLeases(ctx, s.o.Replica, s.o.LeaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("renew the conversations' leases", "err", err)
		}
		return
	}
	has := make(map[string]bool, len(held))
	for _, id := range held {
		has[id] = true
	}
	s.mu.Lock()
	var lost []string
	for id, l := range s.loops {
		if !has[id] {
			lost = append(lost, id)
			l.cancel()
		}
	}
	for id, cancel := range s.tasks {
		if !has[id] {
			lost = append(lost, id)
			cancel()
		}
	}
	s.mu.Unlock()
	for _, id := range lost {
		s.log.Warn("another replica took over the conversation; this one stops running it", "conversation_id", id)
	}
}

// takeOver claims and resumes the conversations that need a runner, have no live lease and
// whose sandbox this replica reaches.
func (s *Service) takeOver(ctx context.Context) {
	us, err := s.o.Store.UnownedConversations(ctx, unownedBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("look for conversations to take over", "err", err)
		}
		return
	}
	var live []string
	for _, u := range us {
		if (u.Node != "" || u.Backend != "") && !s.o.Sandboxes.Reaches(u.Node, u.Backend) {
			if live == nil {
				rs, err := s.o.Store.LiveReplicas(ctx)
				if err != nil {
					return
				}
				live = []string{}
				for _, r := range rs {
					live = append(live, r.Node)
				}
			}
			if u.Node != "" && !slices.Contains(live, u.Node) {
				s.waitForNode(ctx, u)
			}
			continue
		}
		prev, err := s.o.Store.ConversationLease(ctx, u.ID)
		if err != nil {
			continue
		}
		claimed, err := s.claim(ctx, u.ID)
		if err != nil || !claimed {
			continue
		}
		s.log.Info("running conversation", "conversation_id", u.ID)
		// It waited for its node if it says so, or if its lease did (the node's replica frees
		// that lease as it starts, before this).
		s.recordWaiting(ctx, u, nil, strings.HasPrefix(prev.Holder, waitHolderPrefix))
		if err := s.resumeConversation(ctx, u.OwnerID, u.ID); err != nil && ctx.Err() == nil {
			s.log.Error("resume conversation", "conversation_id", u.ID, "err", err)
		}
		s.takeCommands(ctx)
		s.settle(u.ID)
	}
}

// waitForNode says, once per outage, that the conversation waits for its sandbox's node,
// which has no live replica: a lease of the waiting kind, which the first replica to see it
// takes, and an event. The node's replica, once it starts, frees that lease and goes on.
func (s *Service) waitForNode(ctx context.Context, u Unowned) {
	prev, err := s.o.Store.ConversationLease(ctx, u.ID)
	if err != nil {
		return
	}
	claimed, err := s.o.Store.ClaimConversation(ctx, u.ID, waitHolderPrefix+s.o.Replica, u.Node, s.o.LeaseTTL)
	if err != nil || !claimed || strings.HasPrefix(prev.Holder, waitHolderPrefix) {
		return
	}
	s.log.Warn("the conversation waits for its sandbox's node, which runs no replica", "conversation_id", u.ID, "node", u.Node)
	s.recordWaiting(ctx, u, &u.Node, false)
}

// recordWaiting records that the conversation waits for node, or (nil) no longer does: when
// it said it waited (Conversation.WaitingForNode), or waited is set.
func (s *Service) recordWaiting(ctx context.Context, u Unowned, node *string, waited bool) {
	v, err := s.o.Store.GetConversation(ctx, u.OwnerID, u.ID)
	if err != nil || (node == nil && !waited && v.WaitingForNode == "") {
		return
	}
	ev, err := event.NewStateUpdate(s.o.NewEventID(), s.o.Now(), event.StateWaitingForNode, node)
	if err == nil {
		err = s.record(ctx, v.Conversation, []event.Event{ev})
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("record that a conversation waits for its node", "conversation_id", u.ID, "err", err)
	}
}

// resumeConversation runs what the conversation, whose lease this replica holds, needs: its
// unfinished start task, else the delivery of the messages waiting for it, and its agent if
// it was running (it first answers the tool call its last runner was cut off in).
func (s *Service) resumeConversation(ctx context.Context, ownerID, convID string) error {
	s.mu.Lock()
	_, task := s.tasks[convID]
	_, loop := s.loops[convID]
	s.mu.Unlock()
	if task || loop {
		return nil
	}
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if v.TaskStatus != "" && v.TaskStatus != TaskReady && v.TaskStatus != TaskError {
		ts, _, err := s.o.Store.ListStartTasks(ctx, ownerID, TaskFilter{ConversationID: convID}, SortCreatedAtDesc, paging.Query{Limit: 1})
		if err != nil {
			return err
		}
		if len(ts) == 1 && !ts[0].Status.Terminal() {
			s.log.Info("resuming start task", "task_id", ts[0].ID, "conversation_id", convID, "status", string(ts[0].Status))
			s.launch(ts[0], "")
		}
		return nil
	}
	if v.TaskStatus == TaskError {
		return nil
	}
	delivered, err := s.deliverPendingOf(ctx, v.Conversation)
	if err != nil {
		return err
	}
	if delivered || agent.Status(v.ExecutionStatus) == agent.StatusRunning {
		s.startLoop(ownerID, convID)
	}
	return nil
}

// takeCommands acts on the commands left for the conversations this replica holds.
func (s *Service) takeCommands(ctx context.Context) {
	cmds, err := s.o.Store.TakeCommands(ctx, s.o.Replica)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("take the commands for this replica's conversations", "err", err)
		}
		return
	}
	for _, c := range cmds {
		var err error
		switch c.Kind {
		case CommandRun:
			err = s.runCommand(ctx, c.OwnerID, c.ConversationID)
		case CommandPause:
			err = s.pauseHere(ctx, c.OwnerID, c.ConversationID)
		}
		if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
			s.log.Error("command for a conversation", "conversation_id", c.ConversationID, "command", c.Kind, "err", err)
		}
		s.settle(c.ConversationID)
	}
}

// runCommand runs the agent of a conversation this replica holds, unless its start task
// runs (which starts it when READY) or it is not ready.
func (s *Service) runCommand(ctx context.Context, ownerID, convID string) error {
	s.mu.Lock()
	_, task := s.tasks[convID]
	s.mu.Unlock()
	if task {
		return nil
	}
	v, err := s.o.Store.GetConversation(ctx, ownerID, convID)
	if err != nil {
		return err
	}
	if v.TaskStatus != "" && v.TaskStatus != TaskReady {
		return nil
	}
	// Held when the command was taken, the lease may have been settled since (claimed again)
	// or taken over by another replica (the command is left for it).
	started, err := s.runHere(ctx, ownerID, convID)
	if err != nil || started {
		return err
	}
	return s.command(ctx, convID, CommandRun)
}
