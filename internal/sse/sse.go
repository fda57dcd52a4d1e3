// Package sse writes Server-Sent Events: the one writer of the API's event streams and the
// web app's page streams.
package sse

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ShutdownGrace is how long a stream's writes may still take once the context given to
// CutWhen ends: a client that reads takes a last event in far less, one that takes nothing
// is cut off then instead of at the write timeout.
const ShutdownGrace = 2 * time.Second

// Writer writes one response's events. A client that does not take a write within the
// timeout is cut off. Its methods are for the handler's goroutine; CutWhen's function runs
// on another.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer

	mu    sync.Mutex
	done  bool      // the handler has returned: rc may no longer be used
	cutAt time.Time // once cut: no write goes on past it
}

// Start answers 200 with an event stream and sends the headers at once.
func Start(w http.ResponseWriter, timeout time.Duration) (*Writer, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	s := &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
	return s, s.rc.Flush()
}

// CutWhen ends a blocked write ShutdownGrace after ctx ends, and bounds every later write
// to the same moment. The function it returns must run before the handler returns.
func (s *Writer) CutWhen(ctx context.Context) (stop func()) {
	stopAfter := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.done {
			s.cutAt = time.Now().Add(ShutdownGrace)
			s.rc.SetWriteDeadline(s.cutAt)
		}
	})
	return func() {
		stopAfter()
		s.mu.Lock()
		s.done = true
		s.mu.Unlock()
	}
}

// Event sends data as an event, with its id (the client's resume point) and its name when
// they are not "". Each line of data becomes a data line, so a value with line breaks still
// arrives whole.
func (s *Writer) Event(id, name string, data []byte) error {
	s.buf.Reset()
	if id != "" {
		s.buf.WriteString("id: ")
		s.buf.WriteString(oneLine(id))
		s.buf.WriteByte('\n')
	}
	if name != "" {
		s.buf.WriteString("event: ")
		s.buf.WriteString(oneLine(name))
		s.buf.WriteByte('\n')
	}
	for line := range bytes.Lines(data) {
		s.buf.WriteString("data: ")
		s.buf.Write(bytes.TrimRight(line, "\r\n"))
		s.buf.WriteByte('\n')
	}
	if len(data) == 0 {
		s.buf.WriteString("data: \n")
	}
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

// Comment sends a comment, which clients ignore: a heartbeat that keeps proxies from
// closing an idle stream.
func (s *Writer) Comment(text string) error {
	return s.write([]byte(": " + oneLine(text) + "\n\n"))
}

// Retry tells the client how long to wait before it reconnects.
func (s *Writer) Retry(d time.Duration) error {
	return s.write(fmt.Appendf(nil, "retry: %d\n\n", d.Milliseconds()))
}

func (s *Writer) write(p []byte) error {
	s.mu.Lock()
	deadline := time.Now().Add(s.timeout)
	if !s.cutAt.IsZero() && s.cutAt.Before(deadline) {
		deadline = s.cutAt
	}
	err := s.rc.SetWriteDeadline(deadline)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := s.w.Write(p); err != nil {
		return err
	}
	return s.rc.Flush()
}

// lineBreaks drops the line breaks that would end an id, a name or a comment early. One for
// the package, safe for concurrent use: a Replacer builds a 6 KiB table on first use, which
// made per event was a quarter of a stream's CPU for each event and most of its garbage.
var lineBreaks = strings.NewReplacer("\n", "", "\r", "")

func oneLine(s string) string { return lineBreaks.Replace(s) }
