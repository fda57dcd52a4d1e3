package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/tool"
	"github.com/agentd/agentd/internal/tool/mcp"
)

// MCPOptions bound the conversations' MCP servers (see mcp.Options).
type MCPOptions struct {
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
}

// mcpConfigOf is the conversation's MCP configuration: its owner's stored servers, then
// those of its start request, then those its repository skills declare; a request server with
// a stored one's name (stdio) or URL replaces it, and a skill's server with the name or URL of
// one of those is left out.
func (s *Service) mcpConfigOf(ctx context.Context, c Conversation, skills []skill.Skill) ([]mcp.Server, error) {
	var stored, requested settings.MCPConfig
	if s.o.Settings != nil {
		raw, ok, err := s.o.Settings.Secret(ctx, c.OwnerID, "mcp_config")
		if err != nil {
			return nil, fmt.Errorf("mcp servers of %s: %w", c.ID, err)
		}
		if ok {
			if err := json.Unmarshal([]byte(raw), &stored); err != nil {
				return nil, fmt.Errorf("mcp servers of %s: stored settings: %w", c.ID, err)
			}
		}
	}
	if len(c.RequestSealed) > 0 {
		raw, err := s.o.Sealer.Open(c.RequestSealed)
		if err != nil {
			return nil, fmt.Errorf("mcp servers of %s: open its request: %w", c.ID, err)
		}
		var req struct {
			MCPConfig *settings.MCPConfig `json:"mcp_config"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("mcp servers of %s: its request: %w", c.ID, err)
		}
		if req.MCPConfig != nil {
			requested = *req.MCPConfig
		}
	}
	return mcpServers(stored, requested, declaredMCPServers(skills)), nil
}

// declaredMCPServers are the servers the repo skills declare, in the skills' order: as in
// OpenHands, those of knowledge and task skills are not used.
func declaredMCPServers(skills []skill.Skill) []mcp.Server {
	var out []mcp.Server
	for _, sk := range skills {
		if !sk.AlwaysOn() {
			continue
		}
		for _, d := range sk.MCPServers {
			out = append(out, mcp.Server{Name: d.Name, Transport: mcp.Transport(d.Transport), Command: d.Command,
				Args: d.Args, Env: d.Env, URL: d.URL, APIKey: d.APIKey, TimeoutSeconds: d.TimeoutSeconds})
		}
	}
	return out
}

// mcpServers merges the configurations into named servers.
func mcpServers(stored, requested settings.MCPConfig, declared []mcp.Server) []mcp.Server {
	var all []mcp.Server
	add := func(m settings.MCPConfig) {
		for _, st := range m.StdioServers {
			all = append(all, mcp.Server{Name: st.Name, Transport: mcp.Stdio, Command: st.Command, Args: st.Args, Env: st.Env})
		}
		for _, sv := range m.SSEServers {
			all = append(all, mcp.Server{Transport: mcp.SSE, URL: sv.URL, APIKey: deref(sv.APIKey)})
		}
		for _, sv := range m.SHTTPServers {
			srv := mcp.Server{Transport: mcp.SHTTP, URL: sv.URL, APIKey: deref(sv.APIKey)}
			if sv.Timeout != nil {
				srv.TimeoutSeconds = *sv.Timeout
			}
			all = append(all, srv)
		}
	}
	add(stored)
	n := len(all)
	add(requested)
	configured := len(all)
	all = append(all, declared...)
	key := func(s mcp.Server) string {
		if s.Transport == mcp.Stdio {
			return "stdio:" + s.Name
		}
		return "url:" + s.URL
	}
	keys := func(servers []mcp.Server) map[string]bool {
		m := map[string]bool{}
		for _, s := range servers {
			m[key(s)] = true
		}
		return m
	}
	requestedKeys, configuredKeys := keys(all[n:configured]), keys(all[:configured])
	var out []mcp.Server
	names := map[string]bool{}
	for i, s := range all {
		switch {
		case i < n && requestedKeys[key(s)]:
			continue // the request's server replaces the stored one
		case i >= configured && configuredKeys[key(s)]:
			continue // a skill's server gives way to a configured one, or an earlier skill's
		case i >= configured:
			configuredKeys[key(s)] = true
		}
		if s.Transport != mcp.Stdio && (s.Name == "" || i < configured) {
			s.Name = urlServerName(s)
		}
		base := s.Name
		for j := 2; names[s.Name]; j++ {
			s.Name = fmt.Sprintf("%s_%d", base, j)
		}
		names[s.Name] = true
		out = append(out, s)
	}
	return out
}

var notName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// urlServerName names an SSE or streamable-HTTP server after its host, short enough that its
// tools' prefixed names stay within the providers' 64 characters.
func urlServerName(s mcp.Server) string {
	host := s.URL
	if u, err := url.Parse(s.URL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	name := strings.Trim(notName.ReplaceAllString(host, "_"), "_")
	if len(name) > 24 {
		name = name[:24]
	}
	if name == "" {
		name = string(s.Transport)
	}
	return name
}

// mcpTools are a conversation's MCP tools for one run of its agent: those of the servers the
// run started with, named so that none collides with the agent's other tools, and kept
// current as the servers say their tools changed. Used by the run's goroutine only.
type mcpTools struct {
	s     *Service
	conv  Conversation
	taken func(string) bool
	rt    Runtime // nil: no servers, or they could not be started
	gen   uint64
	set   mcp.Toolset
	// reported holds the reason recorded for each server that failed in this run, so that a
	// failure is recorded once, not at every look for changes.
	reported map[string]string
}

// startMCP starts the conversation's MCP servers in its sandbox and lists their tools. A
// server that fails is left out, and an event says which and why; with no servers, or no
// runtime to run them, there are no tools.
func (s *Service) startMCP(ctx context.Context, c Conversation, skills []skill.Skill, taken func(string) bool) *mcpTools {
	m := &mcpTools{s: s, conv: c, taken: taken, reported: map[string]string{}}
	log := s.log.With("conversation_id", c.ID)
	servers, err := s.mcpConfigOf(ctx, c, skills)
	if err != nil {
		logRunErr(ctx, log, "agent: read the MCP configuration", err)
		return m
	}
	if len(servers) == 0 || c.SandboxID == "" || s.o.Runtimes == nil {
		return m
	}
	if _, err := s.o.Sandboxes.WaitRunning(ctx, c.OwnerID, c.SandboxID); err != nil {
		log.Warn("agent: MCP servers not started: the sandbox does not run", "err", err)
		return m
	}
	rt, err := s.o.Runtimes(ctx, c.OwnerID, c.SandboxID)
	if err != nil {
		log.Warn("agent: MCP servers not started: reach the sandbox", "err", err)
		return m
	}
	st, err := rt.ConfigureMCP(ctx, c.ID, runtimeclient.MCPConfigureRequest{
		Servers:               servers,
		ConnectTimeoutSeconds: s.o.MCP.ConnectTimeout.Seconds(),
		CallTimeoutSeconds:    s.o.MCP.CallTimeout.Seconds(),
	})
	if err != nil {
		log.Warn("agent: MCP servers not started", "err", err)
		return m
	}
	m.rt = rt
	m.update(ctx, st)
	return m
}

// update takes st as the servers' state: their tools, and an event for each failure not
// recorded yet in this run.
func (m *mcpTools) update(ctx context.Context, st mcp.State) {
	m.gen, m.set = st.Generation, mcp.NewToolset(st, m.taken)
	var failed []mcp.ServerStatus
	for _, srv := range st.Servers {
		if srv.Error != "" && m.reported[srv.Name] != srv.Error {
			m.reported[srv.Name] = srv.Error
			failed = append(failed, srv)
		}
	}
	m.s.recordMCPFailures(ctx, m.conv, failed)
}

// Tools are the agent tools of the servers, as last listed.
func (m *mcpTools) Tools() []tool.Tool { return m.set.Tools() }

// refresh asks the sandbox's runtime whether a server's tools changed since they were last
// listed (a server said so), and takes the new list when they did; it reports whether it
// took one. A sandbox that
// does not run is not asked (the tools stay as they were): asking a paused one would wait
// for its resume.
func (m *mcpTools) refresh(ctx context.Context) bool {
	if m.rt == nil {
		return false
	}
	if sb, err := m.s.o.Sandboxes.Get(ctx, m.conv.OwnerID, m.conv.SandboxID); err != nil || sb.Status != sandbox.StatusRunning {
		return false
	}
	st, changed, err := m.rt.MCPChanges(ctx, m.conv.ID, m.gen)
	if err != nil {
		if ctx.Err() == nil {
			m.s.log.Warn("agent: look for changed MCP tools", "conversation_id", m.conv.ID, "err", err)
		}
		return false
	}
	if !changed {
		return false
	}
	m.update(ctx, st)
	m.s.log.Info("agent: MCP tools listed again", "conversation_id", m.conv.ID, "tools", len(st.Tools), "generation", st.Generation)
	return true
}

// run runs the MCP tool called name; ok is false when no MCP tool has that name.
func (m *mcpTools) run(ctx context.Context, name string, args json.RawMessage) (res tool.Result, ok bool, err error) {
	ref, ok := m.set.Lookup(name)
	if !ok || m.rt == nil {
		return tool.Result{}, false, nil
	}
	r, err := m.rt.CallMCP(ctx, m.conv.ID, ref.Server, ref.Tool, args)
	if err != nil {
		return tool.Result{}, true, err
	}
	return mcp.Result(name, r), true, nil
}

// recordMCPFailures records one MCPServerErrorEvent per server of failed.
func (s *Service) recordMCPFailures(ctx context.Context, c Conversation, failed []mcp.ServerStatus) {
	var evs []event.Event
	for _, srv := range failed {
		s.log.Info("MCP server left out", "conversation_id", c.ID, "mcp_server", srv.Name, "err", srv.Error)
		ev, err := event.New(s.o.NewEventID(), s.o.Now(), event.SourceEnvironment,
			&event.MCPServerErrorEvent{Server: srv.Name, Transport: string(srv.Transport), Detail: srv.Error})
		if err != nil {
			s.log.Error("MCP server event", "err", err)
			return
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return
	}
	if err := s.record(ctx, c, evs); err != nil {
		logRunErr(ctx, s.log.With("conversation_id", c.ID), "record MCP server events", err)
	}
}
