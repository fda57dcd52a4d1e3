package runtime

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// handleCommandStream runs a command as /api/command does, and sends its output as it comes:
// a caller can show the progress of a long command (a clone) while it runs.
func (s *Server) handleCommandStream(w http.ResponseWriter, r *http.Request) {
	req, ok := s.commandRequest(w, r)
	if !ok {
		return
	}
	cw := &chunkWriter{w: w, rc: http.NewResponseController(w)}
	res, err := s.runCommand(r.Context(), req, cw.output)
	if err != nil {
		s.log.Error("run command", "err", err)
		if !cw.started {
			writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		cw.send(runtimeclient.CommandChunk{Error: "the command could not be run; the runtime's log has the cause"})
		return
	}
	cw.flushTail()
	res.Output = ""
	cw.send(runtimeclient.CommandChunk{Result: &res})
}

// chunkWriter sends output as JSON lines, holding back the bytes of a character that a
// write split until its next write completes it.
type chunkWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	tail    []byte
}

// output is cappedBuffer's onKeep: it is called in order, under the buffer's lock.
func (c *chunkWriter) output(p []byte) {
	b := append(c.tail, p...)
	n := len(b)
	// Hold back an incomplete character at the end (at most three bytes of one).
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				n = len(b) - i
			}
			break
		}
	}
	c.tail = append([]byte(nil), b[n:]...)
	if n > 0 {
		c.send(runtimeclient.CommandChunk{Output: strings.ToValidUTF8(string(b[:n]), "\uFFFD")})
	}
}

// flushTail sends what output is held back, once the command has ended.
func (c *chunkWriter) flushTail() {
	if len(c.tail) > 0 {
		c.send(runtimeclient.CommandChunk{Output: strings.ToValidUTF8(string(c.tail), "\uFFFD")})
		c.tail = nil
	}
}

func (c *chunkWriter) send(ch runtimeclient.CommandChunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.w.Header().Set("Content-Type", "application/x-ndjson")
		c.w.WriteHeader(http.StatusOK)
		c.started = true
	}
	b, _ := json.Marshal(ch) // strings and numbers only
	// A client that went away cancels the request, which kills the command.
	_, _ = c.w.Write(append(b, '\n'))
	_ = c.rc.Flush()
}
