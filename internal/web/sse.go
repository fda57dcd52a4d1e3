package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// heartbeat is how often an idle stream sends a comment, which keeps proxies from closing it.
const heartbeat = 15 * time.Second

// sse writes Server-Sent Events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) (*sse, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	return s, s.rc.Flush()
}

// send writes one event: its id (the client's resume point), its type ("" for message) and
// its data, and flushes it.
func (s *sse) send(id, typ string, data []byte) error {
	var b bytes.Buffer
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", oneLine(id))
	}
	if typ != "" {
		fmt.Fprintf(&b, "event: %s\n", oneLine(typ))
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	return s.rc.Flush()
}

// retry tells the browser how long to wait before it reconnects.
func (s *sse) retry(d time.Duration) error {
	if _, err := fmt.Fprintf(s.w, "retry: %d\n\n", d.Milliseconds()); err != nil {
		return err
	}
	return s.rc.Flush()
}

// ping writes a comment.
func (s *sse) ping() error {
	if _, err := s.w.Write([]byte(": ping\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

func oneLine(s string) string { return strings.NewReplacer("\n", "", "\r", "").Replace(s) }
