package sandbox

import "sync"

// notifier wakes whoever waits for a sandbox's status to change. A waiter takes the channel
// before it reads the status, so a change between the read and the wait is never missed.
type notifier struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// changed returns a channel that is closed at the next change of sandbox id.
func (n *notifier) changed(id string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.chans == nil {
		n.chans = map[string]chan struct{}{}
	}
	ch := n.chans[id]
	if ch == nil {
		ch = make(chan struct{})
		n.chans[id] = ch
	}
	return ch
}

// notify wakes the waiters of sandbox id.
func (n *notifier) notify(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ch := n.chans[id]; ch != nil {
		close(ch)
		delete(n.chans, id)
	}
}
