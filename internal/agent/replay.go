package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/tool"
)

// Replay is a recorded trajectory: the user message that starts it and the actions to
// execute after it.
type Replay struct {
	Text      string
	ImageURLs []string
	Actions   []ReplayAction
}

// ReplayAction is one recorded step: a tool call (Tool and Args), or a message (Tool empty)
// from the agent or, with User set, from the user.
type ReplayAction struct {
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Thought string          `json:"thought,omitempty"`
	Message string          `json:"message,omitempty"`
	User    bool            `json:"user,omitempty"`
}

// ErrBadReplay: replay_json is not a trajectory agentd can replay. Its wrapping error says why
// in words fit for the client.
var ErrBadReplay = errors.New("invalid replay")

// v0Event is an OpenHands V0 trajectory item: an action, an observation, or something else.
type v0Event struct {
	Source      string          `json:"source"`
	Action      string          `json:"action"`
	Observation json.RawMessage `json:"observation"`
	Args        map[string]any  `json:"args"`
	Message     string          `json:"message"`
}

// ParseReplay reads replay_json: a JSON list of OpenHands V0 events, as a trajectory export
// holds them. The first must be the user's message. Observations and events from the
// environment are dropped (executing the actions again makes fresh observations); actions
// agentd has no tool for (browsing, IPython, delegation) are skipped.
func ParseReplay(raw string) (Replay, error) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return Replay{}, fmt.Errorf("%w: replay_json must be a JSON list of events", ErrBadReplay)
	}
	var r Replay
	first := true
	for i, it := range items {
		var ev v0Event
		if err := json.Unmarshal(it, &ev); err != nil {
			return Replay{}, fmt.Errorf("%w: replay_json item %d must be an event object", ErrBadReplay, i)
		}
		if first {
			if ev.Action != "message" || (ev.Source != event.SourceUser && ev.Source != "") {
				return Replay{}, fmt.Errorf("%w: the first event of replay_json must be the user's message", ErrBadReplay)
			}
			r.Text = firstString(ev.Args["content"], ev.Message)
			r.ImageURLs = stringList(ev.Args["image_urls"])
			first = false
			continue
		}
		if len(ev.Observation) > 0 || ev.Source == event.SourceEnvironment || ev.Action == "" {
			continue
		}
		if a, ok := replayAction(ev); ok {
			r.Actions = append(r.Actions, a)
		}
	}
	if first {
		return Replay{}, fmt.Errorf("%w: replay_json holds no events", ErrBadReplay)
	}
	return r, nil
}

// replayAction maps a V0 action onto agentd's tools.
func replayAction(ev v0Event) (ReplayAction, bool) {
	args := ev.Args
	thought, _ := args["thought"].(string)
	call := func(name string, a map[string]any) (ReplayAction, bool) {
		b, err := json.Marshal(a)
		return ReplayAction{Tool: name, Args: b, Thought: thought}, err == nil
	}
	switch ev.Action {
	case "message":
		text := firstString(args["content"], ev.Message)
		return ReplayAction{Message: text, User: ev.Source == event.SourceUser}, text != ""
	case "run":
		a := map[string]any{"command": args["command"]}
		if in, _ := args["is_input"].(bool); in {
			a["is_input"] = true
		}
		return call(tool.Terminal, a)
	case "read":
		a := map[string]any{"command": "view", "path": args["path"]}
		if vr, ok := args["view_range"].([]any); ok && len(vr) == 2 {
			a["view_range"] = vr
		}
		return call(tool.FileEditor, a)
	case "write":
		return call(tool.FileEditor, map[string]any{"command": "create", "path": args["path"], "file_text": firstString(args["content"], "")})
	case "edit":
		cmd, _ := args["command"].(string)
		if cmd == "" {
			// An edit written by an LLM-based editor: its content becomes the file.
			return call(tool.FileEditor, map[string]any{"command": "create", "path": args["path"], "file_text": firstString(args["content"], "")})
		}
		a := map[string]any{"command": cmd, "path": args["path"]}
		for _, k := range []string{"file_text", "old_str", "new_str", "insert_line", "view_range"} {
			if v, ok := args[k]; ok && v != nil {
				a[k] = v
			}
		}
		return call(tool.FileEditor, a)
	case "think":
		return call(tool.Think, map[string]any{"thought": thought})
	case "finish":
		msg := firstString(args["final_thought"], "")
		if outputs, ok := args["outputs"].(map[string]any); ok && msg == "" {
			msg = firstString(outputs["content"], "")
		}
		return call(tool.Finish, map[string]any{"message": firstString(msg, "The recorded task is complete.")})
	}
	return ReplayAction{}, false
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Replayed events are marked by their ids: tool call ids "replay_<n>" and response ids
// "replay-<n>", n being the action's index in the trajectory.
const (
	replayCallPrefix     = "replay_"
	replayResponsePrefix = "replay-"
)

func isReplayed(callID string) bool { return strings.HasPrefix(callID, replayCallPrefix) }

// nextReplay returns the next recorded action to execute: the one after the last the log
// shows as executed.
func (a *Agent) nextReplay() (int, bool) {
	if len(a.cfg.Replay) == 0 {
		return 0, false
	}
	return a.replayNext, a.replayNext < len(a.cfg.Replay)
}

// replay executes recorded action n, recording it as if the model had asked for it.
func (a *Agent) replay(ctx context.Context, n int) error {
	ra := a.cfg.Replay[n]
	respID := replayResponsePrefix + strconv.Itoa(n)
	if ra.Tool == "" {
		var ev event.Event
		var err error
		if ra.User {
			// The response id marks it as part of the replay, so it is not replayed twice.
			ev, err = event.New(a.o.NewID(), a.o.Now(), event.SourceUser, &event.MessageEvent{
				LLMMessage:      event.LLMMessage{Role: "user", Content: []any{event.Text(ra.Message)}},
				ActivatedSkills: []string{}, ExtendedContent: []any{}, LLMResponseID: respID,
			})
		} else {
			ev, err = event.NewAgentMessage(a.o.NewID(), a.o.Now(), ra.Message, respID)
		}
		if err != nil {
			return err
		}
		return a.append(ctx, ev)
	}
	args := a.remapPaths(ra.Args)
	tc := llm.ToolCall{ID: replayCallPrefix + strconv.Itoa(n), Name: ra.Tool, Arguments: string(args)}
	c := a.tools.parseCall(tc)
	thought := []event.TextPart{}
	if strings.TrimSpace(ra.Thought) != "" {
		thought = []event.TextPart{event.Text(ra.Thought)}
	}
	act, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, &event.ActionEvent{
		Thought: thought, Action: c.action, ToolName: c.name, ToolCallID: tc.ID,
		ToolCall:      event.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Origin: "completion"},
		LLMResponseID: respID, SecurityRisk: "UNKNOWN",
	})
	if err != nil {
		return err
	}
	evs := []event.Event{act}
	if c.problem != "" {
		ev, err := event.New(a.o.NewID(), a.o.Now(), event.SourceAgent, &event.AgentErrorEvent{
			ToolName: c.name, ToolCallID: tc.ID, Error: c.problem,
		})
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	if err := a.append(ctx, evs...); err != nil {
		return err
	}
	if c.problem != "" {
		return nil
	}
	return a.execute(ctx, c, act.ID)
}

// remapPaths moves file paths recorded under OpenHands' /workspace into this sandbox's
// workspace, and relative ones under it.
func (a *Agent) remapPaths(args json.RawMessage) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return args
	}
	p, ok := obj["path"].(string)
	if !ok || p == "" {
		return args
	}
	const recorded = "/workspace"
	switch {
	case !path.IsAbs(p):
		p = path.Join(a.cfg.Workspace, p)
	case a.cfg.Workspace != recorded && (p == recorded || strings.HasPrefix(p, recorded+"/")):
		p = a.cfg.Workspace + strings.TrimPrefix(p, recorded)
	default:
		return args
	}
	obj["path"] = p
	b, err := json.Marshal(obj)
	if err != nil {
		return args
	}
	return b
}
