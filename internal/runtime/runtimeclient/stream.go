package runtimeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// CommandChunk is one line of the answer to POST /api/command/stream (JSON lines): output as
// the command writes it, then one line with the result (whose Output is empty: the output
// came in the lines before), or one with an error when the command could not be run.
type CommandChunk struct {
	Output string         `json:"output,omitempty"`
	Result *CommandResult `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
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
