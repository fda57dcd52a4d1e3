package conversation

import (
	"errors"
	"time"
)

// Ownership of conversations among replicas. A conversation's agent loop and start task run
// on the replica that holds its lease in the store: a holder (the replica's id) and an
// expiry, which the holder renews while it runs them and releases when they end. A replica
// takes only a lease that is free, expired or its own, so two replicas never run one
// conversation; one that dies loses its leases when they expire, and another takes the
// conversation over from its event log, as a restart does. The appends of a holder's loop
// name the holder (StateUpdate.Holder), and the store refuses them once another replica
// holds the lease, so a replica that lost its lease without knowing records nothing more.
//
// Requests for a conversation's loop (run it, pause it) reach any replica. The replica that
// takes one records what it can itself (a message, the pause of an agent nobody runs) and
// leaves the rest to the holder as a command in the store, with a wake-up (Waker); the holder
// takes its commands and acts on them. A conversation with commands waiting is work that
// needs a runner, so a command left for a holder that died is taken by the next one.

// ErrLeaseLost: another replica holds the conversation's lease.
var ErrLeaseLost = errors.New("another replica runs the conversation now")

// Lease is who runs a conversation, and until when they may without renewing.
type Lease struct {
	Holder  string
	Node    string
	Expires time.Time
}

// Claim is the lease a conversation is created under (Store.CreateConversation): Holder's, of
// Node, for TTL as the store's clock counts it, as ClaimConversation takes a lease. The zero
// Claim creates it without one.
type Claim struct {
	Holder, Node string
	TTL          time.Duration
}

// Replica is a replica of the store as its heartbeat tells it.
type Replica struct {
	ID, Node string
	// Keys are the ids of the keys its keyring holds, sorted; ActiveKey is the one it seals
	// with.
	Keys      []string
	ActiveKey string
}

// Command kinds: what a replica asks the holder of a conversation's lease to do.
const (
	// CommandRun: run the agent (a message arrived, the user ran it or answered a
	// confirmation).
	CommandRun = "run"
	// CommandPause: pause the agent running there.
	CommandPause = "pause"
)

// Command is a request left for the holder of a conversation's lease.
type Command struct {
	ConversationID string
	OwnerID        string
	Kind           string
}

// Unowned is a conversation that needs a runner and whose lease is free or expired: its agent
// is running, its start task is unfinished, messages wait for it while it is ready, or
// commands wait for it. Node and Backend are those of its sandbox (the conversation's, else
// its start task's), empty when it has none yet.
type Unowned struct {
	ID      string
	OwnerID string
	Node    string
	Backend string
}

// Waker carries the wake-ups that tell a replica it has commands waiting: Wake tells the
// holder, and each of this replica's wake-ups comes on Wakeups. A wake-up may be lost (a
// broken connection), so holders also look for commands now and then.
type Waker interface {
	Wake(holder string)
	Wakeups() <-chan struct{}
}

// localWaker is the Waker of a replica alone on its store: wake-ups go to itself.
type localWaker struct{ c chan struct{} }

func newLocalWaker() *localWaker { return &localWaker{c: make(chan struct{}, 1)} }

func (w *localWaker) Wake(string) {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (w *localWaker) Wakeups() <-chan struct{} { return w.c }
