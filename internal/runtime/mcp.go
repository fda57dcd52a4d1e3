package runtime

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/tool/mcp"
	"github.com/agentd/agentd/internal/wire"
)

// mcpHubs holds the MCP servers of each conversation, for the life of the runtime or until the
// conversation's tool session is closed.
type mcpHubs struct {
	s      *Server
	mu     sync.Mutex
	byConv map[string]*mcpHub
	closed bool
}

type mcpHub struct {
	*mcp.Hub
	opts mcp.Options
}

func newMCPHubs(s *Server) *mcpHubs { return &mcpHubs{s: s, byConv: map[string]*mcpHub{}} }

// configure gives the conversation the servers of req, making its hub if needed, or making it
// again if the time bounds changed.
func (hs *mcpHubs) configure(conv string, req runtimeclient.MCPConfigureRequest) (*mcp.Hub, error) {
	opts := mcp.Options{
		Dir:            hs.s.cfg.Workspace,
		BaseEnv:        hs.s.env,
		ConnectTimeout: seconds(req.ConnectTimeoutSeconds),
		CallTimeout:    seconds(req.CallTimeoutSeconds),
		Credential:     hs.s.cfg.Credential,
	}
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		return nil, errToolsClosed
	}
	h := hs.byConv[conv]
	var stale *mcpHub
	if h != nil && (h.opts.ConnectTimeout != opts.ConnectTimeout || h.opts.CallTimeout != opts.CallTimeout) {
		stale, h = h, nil
	}
	if h == nil {
		h = &mcpHub{Hub: mcp.NewHub(opts, hs.s.log.With("conversation_id", conv)), opts: opts}
		hs.byConv[conv] = h
	}
	hs.mu.Unlock()
	if stale != nil {
		stale.Close()
	}
	if err := h.Configure(req.Servers); err != nil {
		return nil, err
	}
	return h.Hub, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (hs *mcpHubs) get(conv string) *mcp.Hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.byConv[conv]; h != nil {
		return h.Hub
	}
	return nil
}

// close stops the conversation's servers.
func (hs *mcpHubs) close(conv string) bool {
	hs.mu.Lock()
	h := hs.byConv[conv]
	delete(hs.byConv, conv)
	hs.mu.Unlock()
	if h == nil {
		return false
	}
	h.Close()
	return true
}

func (hs *mcpHubs) closeAll() {
	hs.mu.Lock()
	hs.closed = true
	all := hs.byConv
	hs.byConv = map[string]*mcpHub{}
	hs.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range all {
		wg.Go(h.Close)
	}
	wg.Wait()
}

// decodeBody decodes a JSON request body, answering the client itself when it cannot.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, limit int64, dst any) bool {
	body, ok := readBody(w, r, limit)
	if !ok {
		return false
	}
	err := wire.DecodeJSON(body, dst)
	var invalid *wire.Error
	if errors.As(err, &invalid) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string][]wire.Problem{"detail": invalid.Problems})
		return false
	}
	if err != nil {
		s.log.Error("decode request", "path", r.URL.Path, "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return false
	}
	return true
}

// handleMCPConfigure gives a conversation its MCP servers and answers with their tools and,
// for each server that could not be started or reached, why.
func (s *Server) handleMCPConfigure(w http.ResponseWriter, r *http.Request) {
	var req runtimeclient.MCPConfigureRequest
	if !s.decodeBody(w, r, maxBodyBytes, &req) {
		return
	}
	h, err := s.mcp.configure(r.PathValue("conversation_id"), req)
	switch {
	case errors.Is(err, errToolsClosed):
		writeDetail(w, http.StatusServiceUnavailable, "The runtime is shutting down")
		return
	case err != nil:
		writeDetail(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.State(r.Context()))
}

// handleMCPState answers with the conversation's MCP tools, listing again those of servers
// that said their tools changed and trying again the servers that failed. Its ETag is the
// state's generation: with If-None-Match naming one, it answers 304 while that is still the
// generation, and otherwise lists only what changed (see mcp.Hub.Changes).
func (s *Server) handleMCPState(w http.ResponseWriter, r *http.Request) {
	h := s.mcp.get(r.PathValue("conversation_id"))
	if h == nil {
		writeDetail(w, http.StatusNotFound, "The conversation has no MCP servers")
		return
	}
	var st mcp.State
	if tag := r.Header.Get("If-None-Match"); tag != "" {
		since, err := strconv.ParseUint(strings.Trim(tag, `"`), 10, 64)
		if err != nil {
			writeDetail(w, http.StatusBadRequest, "If-None-Match is not a generation")
			return
		}
		var changed bool
		if st, changed = h.Changes(r.Context(), since); !changed {
			w.Header().Set("ETag", generationTag(since))
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else {
		st = h.State(r.Context())
	}
	w.Header().Set("ETag", generationTag(st.Generation))
	writeJSON(w, http.StatusOK, st)
}

func generationTag(gen uint64) string { return `"` + strconv.FormatUint(gen, 10) + `"` }

func (s *Server) handleMCPCall(w http.ResponseWriter, r *http.Request) {
	var req runtimeclient.MCPCallRequest
	if !s.decodeBody(w, r, maxToolBodyBytes, &req) {
		return
	}
	h := s.mcp.get(r.PathValue("conversation_id"))
	if h == nil {
		writeDetail(w, http.StatusNotFound, "The conversation has no MCP servers")
		return
	}
	res, err := h.Call(r.Context(), req.Server, req.Tool, req.Arguments)
	switch {
	case errors.Is(err, mcp.ErrUnknownServer):
		writeDetail(w, http.StatusNotFound, "No MCP server "+req.Server+" in this conversation")
		return
	case err != nil:
		s.log.Error("mcp call", "mcp_server", req.Server, "tool", req.Tool, "err", err)
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	case r.Context().Err() != nil:
		return
	}
	writeJSON(w, http.StatusOK, res)
}
