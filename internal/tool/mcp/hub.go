package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownServer is returned for a call to a server the hub does not have.
var ErrUnknownServer = errors.New("unknown mcp server")

// ToolInfo is one tool of a server, as the server describes it.
type ToolInfo struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the server's JSON Schema of the arguments, as it gave it.
	InputSchema json.RawMessage `json:"input_schema"`
	// ReadOnly is the server's readOnlyHint.
	ReadOnly bool `json:"read_only,omitempty"`
}

// ServerStatus says whether a server could be used, and if not, why.
type ServerStatus struct {
	Name      string    `json:"name"`
	Transport Transport `json:"transport"`
	// Error is why the server's tools could not be listed; empty when they were.
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
}

// State is the hub's servers and their tools.
type State struct {
	Servers []ServerStatus `json:"servers"`
	Tools   []ToolInfo     `json:"tools"`
	// Generation goes up whenever a server says its tools changed, so that a caller can tell
	// cheaply whether to ask again.
	Generation uint64 `json:"generation"`
}

// Hub holds the MCP servers of one conversation. It is safe for concurrent use. Close stops
// every server; it is safe to call more than once, and a hub is unusable after it.
type Hub struct {
	opts Options
	log  *slog.Logger
	gen  atomic.Uint64

	mu     sync.Mutex
	conns  []*conn
	closed bool
}

// NewHub returns a hub without servers; log may be nil.
func NewHub(opts Options, log *slog.Logger) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{opts: opts.withDefaults(), log: log}
}

// Configure makes servers the hub's servers, keeping those already there unchanged (their
// processes and sessions) and stopping those left out. It connects nothing: State and Call
// do, as they need. A server that fails Check, or two with the same name, are an error and
// change nothing.
func (h *Hub) Configure(servers []Server) error {
	seen := map[string]bool{}
	for _, s := range servers {
		if err := s.Check(); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("mcp server name %q used twice", s.Name)
		}
		seen[s.Name] = true
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	old := map[string]*conn{}
	for _, c := range h.conns {
		old[c.spec.Name] = c
	}
	conns := make([]*conn, 0, len(servers))
	for _, s := range servers {
		if c := old[s.Name]; c != nil && reflect.DeepEqual(c.spec, s) {
			conns = append(conns, c)
			delete(old, s.Name)
			continue
		}
		conns = append(conns, newConn(s, h.opts, h.log, h.bump))
	}
	h.conns = conns
	h.gen.Add(1)
	h.mu.Unlock()
	for _, c := range old {
		c.close()
	}
	return nil
}

func (h *Hub) bump() { h.gen.Add(1) }

// Generation is State's Generation, without listing anything.
func (h *Hub) Generation() uint64 { return h.gen.Load() }

// State lists every server's tools, connecting the servers not connected and listing again
// those whose tools changed, all at once. A server that fails is in the answer with its
// reason, without tools.
func (h *Hub) State(ctx context.Context) State { return h.state(ctx, true) }

// Changes is State for a caller that has seen generation since: while that is still the
// generation it lists nothing and reports false. Otherwise it lists again the tools of the
// servers that said they changed, and tries no server that is not connected: a server that
// failed keeps its reason, and one whose session ended keeps its last tools (its next call
// connects it again). A server that hangs thus costs its time bound once per State, not once
// per look for changes.
func (h *Hub) Changes(ctx context.Context, since uint64) (State, bool) {
	if h.gen.Load() == since {
		return State{Generation: since}, false
	}
	return h.state(ctx, false), true
}

func (h *Hub) state(ctx context.Context, retry bool) State {
	st := State{Generation: h.gen.Load()}
	conns := h.snapshot()
	st.Servers = make([]ServerStatus, len(conns))
	tools := make([][]*sdk.Tool, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			st.Servers[i] = ServerStatus{Name: c.spec.Name, Transport: c.spec.Transport}
			ts, err := c.list(ctx, retry)
			if err != nil {
				st.Servers[i].Error = err.Error()
				h.log.Warn("mcp server unavailable", "mcp_server", c.spec.Name, "err", err)
				return
			}
			tools[i] = ts
			st.Servers[i].Tools = len(ts)
		})
	}
	wg.Wait()
	st.Tools = []ToolInfo{}
	for i, ts := range tools {
		for _, t := range ts {
			st.Tools = append(st.Tools, toolInfo(conns[i].spec.Name, t))
		}
	}
	return st
}

func toolInfo(server string, t *sdk.Tool) ToolInfo {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
		schema = []byte(`{"type":"object"}`)
	}
	info := ToolInfo{Server: server, Name: t.Name, Description: t.Description, InputSchema: schema}
	if t.Annotations != nil {
		info.ReadOnly = t.Annotations.ReadOnlyHint
	}
	return info
}

// Call calls a server's tool with the model's arguments, as they came. A call that fails or
// runs out of time is an answer with IsError set, not an error: the error is only for a
// server the hub does not have.
func (h *Hub) Call(ctx context.Context, server, tool string, args json.RawMessage) (CallResult, error) {
	var c *conn
	for _, cc := range h.snapshot() {
		if cc.spec.Name == server {
			c = cc
		}
	}
	if c == nil {
		return CallResult{}, fmt.Errorf("call %s/%s: %w", server, tool, ErrUnknownServer)
	}
	res, err := c.call(ctx, tool, args)
	if err != nil {
		return errorResult(tool, err), nil
	}
	return convertResult(res), nil
}

func (h *Hub) snapshot() []*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*conn(nil), h.conns...)
}

// Close stops every server.
func (h *Hub) Close() {
	h.mu.Lock()
	conns := h.conns
	h.conns, h.closed = nil, true
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.close)
	}
	wg.Wait()
}
