package cli

import (
	"fmt"
	"sync"
	"time"
)

// spinner shows that something is under way, on standard error when it is a terminal. On
// anything else it writes each new message once, as a line.
type spinner struct {
	a    *app
	tty  bool
	mu   sync.Mutex
	msg  string
	quit chan struct{}
	done chan struct{}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (a *app) startSpinner(msg string) *spinner {
	s := &spinner{a: a, tty: a.env.Terminal(a.env.Stderr), quit: make(chan struct{}), done: make(chan struct{})}
	s.set(msg)
	if !s.tty {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			s.mu.Lock()
			fmt.Fprintf(a.env.Stderr, "\r\x1b[2K%s %s", spinnerFrames[i%len(spinnerFrames)], s.msg)
			s.mu.Unlock()
			select {
			case <-s.quit:
				fmt.Fprint(a.env.Stderr, "\r\x1b[2K")
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// set changes the message.
func (s *spinner) set(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg == s.msg {
		return
	}
	s.msg = msg
	if !s.tty {
		fmt.Fprintln(s.a.env.Stderr, msg)
	}
}

// stop clears the spinner. Safe to call twice.
func (s *spinner) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}
