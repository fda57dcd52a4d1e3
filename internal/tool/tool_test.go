package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// TestSchemasGolden pins what the model is shown: every tool's name, place, description and
// parameter schema. Run with -update after changing a tool on purpose.
func TestSchemasGolden(t *testing.T) {
	type entry struct {
		Name        string         `json:"name"`
		Place       string         `json:"place"`
		ReadOnly    bool           `json:"read_only"`
		Observation string         `json:"observation_kind"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	var all []entry
	for _, tl := range Builtin() {
		all = append(all, entry{tl.Name, tl.Place.String(), tl.ReadOnly, tl.ObservationKind, tl.Description, tl.Parameters()})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(all); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("tool schemas changed; run go test ./internal/tool -update and review the diff")
	}
}

// TestSchemaShape checks what LLM APIs require of a parameters schema: a self-contained
// object schema, every required name a property, no $ref and no null types.
func TestSchemaShape(t *testing.T) {
	for _, tl := range Builtin() {
		t.Run(tl.Name, func(t *testing.T) {
			p := tl.Parameters()
			if p["type"] != "object" {
				t.Fatalf("type %v", p["type"])
			}
			props, ok := p["properties"].(map[string]any)
			if !ok || len(props) == 0 {
				t.Fatalf("properties %v", p["properties"])
			}
			if req, ok := p["required"].([]any); ok {
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						t.Fatalf("required %q is not a property", r)
					}
				}
			}
			b, _ := json.Marshal(p)
			for _, bad := range []string{`"$ref"`, `"null"`, `"title":"`} {
				if bytes.Contains(b, []byte(bad)) {
					t.Fatalf("schema holds %s: %s", bad, b)
				}
			}
			// Parameters returns a copy each time.
			p["type"] = "changed"
			if tl.Parameters()["type"] != "object" {
				t.Fatal("Parameters shares its map")
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	want := map[string]Place{Terminal: Sandbox, FileEditor: Sandbox, Glob: Sandbox, Grep: Sandbox,
		Think: ControlPlane, Finish: ControlPlane, TaskTracker: ControlPlane}
	got := map[string]Place{}
	for _, tl := range Builtin() {
		got[tl.Name] = tl.Place
		l, ok := Lookup(tl.Name)
		if !ok || l.Name != tl.Name {
			t.Fatalf("Lookup(%q) = %v", tl.Name, ok)
		}
		if InSandbox(tl.Name) != (tl.Place == Sandbox) {
			t.Fatalf("InSandbox(%q) wrong", tl.Name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v", got)
	}
	if _, ok := Lookup("bash"); ok || InSandbox("bash") {
		t.Fatal("unknown tool found")
	}
	if _, ok := Lookup(Terminal); !ok {
		t.Fatal("terminal missing")
	}
	if tl, _ := Lookup(FileEditor); reflect.TypeOf(tl.NewArgs()) != reflect.TypeFor[*FileEditorArgs]() {
		t.Fatalf("NewArgs gives %T", tl.NewArgs())
	}
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name string
		tool string
		raw  string
		dst  any
		want any    // the decoded value when valid
		err  string // a substring of the model's message when invalid
	}{
		{name: "terminal", tool: Terminal, raw: `{"command":"ls","timeout":5}`, dst: &TerminalArgs{},
			want: &TerminalArgs{Command: "ls", Timeout: ptr(5.0)}},
		{name: "nulls dropped", tool: Terminal, raw: `{"command":"ls","timeout":null,"is_input":null}`, dst: &TerminalArgs{},
			want: &TerminalArgs{Command: "ls"}},
		{name: "agent-only args dropped", tool: Terminal, raw: `{"command":"ls","summary":"list","security_risk":"LOW"}`, dst: &TerminalArgs{},
			want: &TerminalArgs{Command: "ls"}},
		{name: "strings repaired", tool: Terminal, raw: `{"command":"ls","is_input":"false","timeout":"2.5"}`, dst: &TerminalArgs{},
			want: &TerminalArgs{Command: "ls", Timeout: ptr(2.5)}},
		{name: "list as string", tool: FileEditor, raw: `{"command":"view","path":"/a","view_range":"[1, 5]","insert_line":"3"}`, dst: &FileEditorArgs{},
			want: &FileEditorArgs{Command: EditorView, Path: "/a", ViewRange: []int{1, 5}, InsertLine: ptr(3)}},
		{name: "empty strings kept", tool: FileEditor, raw: `{"command":"str_replace","path":"/a","old_str":"x","new_str":""}`, dst: &FileEditorArgs{},
			want: &FileEditorArgs{Command: EditorStrReplace, Path: "/a", OldStr: ptr("x"), NewStr: ptr("")}},
		{name: "task list defaults", tool: TaskTracker, raw: `{"command":"plan","task_list":[{"title":"a","notes":null}]}`, dst: &TaskTrackerArgs{},
			want: &TaskTrackerArgs{Command: TaskPlan, TaskList: []TaskItem{{Title: "a", Status: TaskTodo}}}},
		{name: "task list as string", tool: TaskTracker, raw: `{"command":"plan","task_list":"[{\"title\":\"a\",\"status\":\"done\"}]"}`, dst: &TaskTrackerArgs{},
			want: &TaskTrackerArgs{Command: TaskPlan, TaskList: []TaskItem{{Title: "a", Status: TaskDone}}}},
		{name: "view by default", tool: TaskTracker, raw: `{}`, dst: &TaskTrackerArgs{}, want: &TaskTrackerArgs{Command: TaskView}},
		{name: "empty arguments", tool: Think, raw: ``, dst: &ThinkArgs{}, err: "thought: Field required"},
		{name: "missing", tool: Terminal, raw: `{}`, dst: &TerminalArgs{}, err: "command: Field required\nArguments provided: []"},
		{name: "bad enum", tool: FileEditor, raw: `{"command":"delete","path":"/a"}`, dst: &FileEditorArgs{},
			err: "command: Input should be 'view', 'create', 'str_replace', 'insert' or 'undo_edit'"},
		{name: "short view_range", tool: FileEditor, raw: `{"command":"view","path":"/a","view_range":[1]}`, dst: &FileEditorArgs{},
			err: "view_range: List should have at least 2 items"},
		{name: "negative timeout", tool: Terminal, raw: `{"command":"x","timeout":-1}`, dst: &TerminalArgs{}, err: "timeout: Input should be greater than or equal to 0"},
		{name: "reset with input", tool: Terminal, raw: `{"command":"x","is_input":true,"reset":true}`, dst: &TerminalArgs{}, err: "reset: reset cannot be combined with is_input"},
		{name: "unknown argument", tool: Glob, raw: `{"pattern":"*","recursive":true}`, dst: &GlobArgs{}, err: "recursive: Extra inputs are not permitted\nArguments provided: [pattern, recursive]"},
		{name: "plan without list", tool: TaskTracker, raw: `{"command":"plan"}`, dst: &TaskTrackerArgs{}, err: "task_list: task_list is required for command plan"},
		{name: "bad status", tool: TaskTracker, raw: `{"command":"plan","task_list":[{"title":"a","status":"blocked"}]}`, dst: &TaskTrackerArgs{},
			err: "task_list.0.status: Input should be 'todo', 'in_progress' or 'done'"},
		{name: "not json", tool: Grep, raw: `{"pattern":`, dst: &GrepArgs{}, err: "must be one JSON object"},
		{name: "not an object", tool: Grep, raw: `"x"`, dst: &GrepArgs{}, err: "must be one JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := DecodeArgs(tt.tool, json.RawMessage(tt.raw), tt.dst)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(tt.dst, tt.want) {
					t.Fatalf("got %+v, want %+v", tt.dst, tt.want)
				}
				return
			}
			ae, ok := err.(*ArgsError)
			if !ok {
				t.Fatalf("error %v (%T), want an *ArgsError", err, err)
			}
			if !strings.Contains(ae.Error(), tt.err) {
				t.Fatalf("message lacks %q:\n%s", tt.err, ae.Error())
			}
			res := ae.Result()
			var obs struct {
				Kind    string        `json:"kind"`
				Content []TextContent `json:"content"`
				IsError bool          `json:"is_error"`
			}
			if err := json.Unmarshal(res.Observation, &obs); err != nil || !res.IsError || !obs.IsError || obs.Content[0].Text != res.Text {
				t.Fatalf("result %+v", res)
			}
			if tl, _ := Lookup(tt.tool); obs.Kind != tl.ObservationKind {
				t.Fatalf("kind %q", obs.Kind)
			}
		})
	}
	if err := DecodeArgs("nope", nil, &TerminalArgs{}); err == nil {
		t.Fatal("unknown tool decoded")
	}
	if err := DecodeArgs(Terminal, nil, &GlobArgs{}); err == nil {
		t.Fatal("wrong destination decoded")
	}
}

func TestTaskTracker(t *testing.T) {
	list, res := ApplyTaskTracker(nil, TaskTrackerArgs{Command: TaskView})
	if len(list) != 0 || !strings.Contains(res.Text, "no task list yet") || res.IsError {
		t.Fatalf("empty view: %s", res.Text)
	}
	plan := []TaskItem{
		{Title: "Reproduce the bug", Status: TaskDone},
		{Title: "Fix the parser", Notes: "off by one in\nthe tokenizer", Status: TaskInProgress},
		{Title: "Add a test"},
	}
	list, res = ApplyTaskTracker(list, TaskTrackerArgs{Command: TaskPlan, TaskList: plan})
	wantList := "# Task list (1 of 3 done)\n\n1. [x] Reproduce the bug\n2. [~] Fix the parser\n   off by one in\n   the tokenizer\n3. [ ] Add a test"
	if res.Text != "The task list now has 3 item(s).\n\n"+wantList {
		t.Fatalf("plan text:\n%s", res.Text)
	}
	if list[2].Status != TaskTodo || plan[2].Status != "" {
		t.Fatal("plan did not default the status on a copy")
	}
	var obs TaskTrackerObservation
	if err := json.Unmarshal(res.Observation, &obs); err != nil || obs.Kind != KindTaskTracker || obs.Command != "plan" || len(obs.TaskList) != 3 {
		t.Fatalf("observation %s", res.Observation)
	}
	same, res := ApplyTaskTracker(list, TaskTrackerArgs{})
	if res.Text != wantList || len(same) != 3 {
		t.Fatalf("view:\n%s", res.Text)
	}
	list, res = ApplyTaskTracker(list, TaskTrackerArgs{Command: TaskPlan, TaskList: []TaskItem{}})
	if len(list) != 0 || res.Text != "The task list now has 0 item(s)." {
		t.Fatalf("clear: %s", res.Text)
	}
	if err := json.Unmarshal(res.Observation, &obs); err != nil || obs.TaskList == nil {
		t.Fatalf("cleared list is not []: %s", res.Observation)
	}
}

func TestThinkAndFinish(t *testing.T) {
	res := ThinkResult(ThinkArgs{Thought: "hmm"})
	if res.IsError || !strings.Contains(string(res.Observation), `"kind":"ThinkObservation"`) {
		t.Fatalf("think %+v", res)
	}
	res = FinishResult(FinishArgs{Message: "All done."})
	if res.Text != "All done." || string(res.Observation) != `{"kind":"FinishObservation","content":[{"type":"text","text":"All done."}],"is_error":false}` {
		t.Fatalf("finish %s", res.Observation)
	}
}

func ptr[T any](v T) *T { return &v }

func TestNewRaw(t *testing.T) {
	tl := NewRaw("srv_lookup", "Looks up.", Sandbox, true, "MCPToolObservation", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if p := tl.Parameters(); p["required"] == nil {
		t.Errorf("parameters lost the schema: %v", p)
	}
	args := tl.NewArgs()
	if err := tl.DecodeArgs(json.RawMessage(`{"n":"3","summary":"s","security_risk":"LOW"}`), args); err != nil {
		t.Fatal(err)
	}
	if got := string(*args.(*json.RawMessage)); got != `{"n":3}` {
		t.Errorf("arguments = %s", got)
	}
	var ae *ArgsError
	if err := tl.DecodeArgs(json.RawMessage(`[1]`), args); !errors.As(err, &ae) || !ae.Malformed {
		t.Errorf("a list of arguments: %v", err)
	}
}
