package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"
)

// CommandChunk is one line of the answer to POST /api/command/stream (JSON lines): output as
// the command writes it, then one line with the result (whose Output is empty: the output
// came in the lines before), or one with an error when the command could not be run.
type CommandChunk struct {
	Output string         `json:"output,omitempty"`
	Result *CommandResult `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
}

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
		cw.send(CommandChunk{Error: "the command could not be run; the runtime's log has the cause"})
		return
	}
	cw.flushTail()
	res.Output = ""
	cw.send(CommandChunk{Result: &res})
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
		c.send(CommandChunk{Output: strings.ToValidUTF8(string(b[:n]), "\uFFFD")})
	}
}

// flushTail sends what output is held back, once the command has ended.
func (c *chunkWriter) flushTail() {
	if len(c.tail) > 0 {
		c.send(CommandChunk{Output: strings.ToValidUTF8(string(c.tail), "\uFFFD")})
		c.tail = nil
	}
}

func (c *chunkWriter) send(ch CommandChunk) {
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

// RunStream runs a command as Run does, calling onOutput with its output as the command
// writes it (in pieces of any size, never splitting a character). The result's Output holds
// the whole output as Run's does.
func (c *Client) RunStream(ctx context.Context, req CommandRequest, onOutput func(string)) (CommandResult, error) {
	res, err := c.runStream(ctx, req, onOutput)
	if err != nil {
		return CommandResult{}, fmt.Errorf("runtime command: %w", err)
	}
	return res, nil
}

func (c *Client) runStream(ctx context.Context, req CommandRequest, onOutput func(string)) (CommandResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return CommandResult{}, err
	}
	hreq, err := c.NewRequest(ctx, http.MethodPost, "/api/command/stream", strings.NewReader(string(body)))
	if err != nil {
		return CommandResult{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return CommandResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return CommandResult{}, &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	}
	var out strings.Builder
	dec := json.NewDecoder(resp.Body)
	for {
		var ch CommandChunk
		if err := dec.Decode(&ch); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return CommandResult{}, fmt.Errorf("read the answer: %w", err)
		}
		switch {
		case ch.Error != "":
			return CommandResult{}, errors.New(ch.Error)
		case ch.Result != nil:
			res := *ch.Result
			res.Output = out.String()
			return res, nil
		case ch.Output != "":
			out.WriteString(ch.Output)
			if onOutput != nil {
				onOutput(ch.Output)
			}
		}
	}
}
