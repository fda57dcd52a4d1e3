package tool

import "encoding/json"

// Result is what running a tool gives back.
type Result struct {
	// Text is what the model sees.
	Text string `json:"text"`
	// IsError marks a call that did not do what was asked: bad arguments, a refused command, a
	// failed edit. The model is expected to correct itself.
	IsError bool `json:"is_error"`
	// Observation is the OpenHands observation object, with its "kind", for the event log.
	Observation json.RawMessage `json:"observation"`
}

// NewResult builds a Result from the model's text and an observation value (one of the
// *Observation types of this package).
func NewResult(text string, isError bool, obs any) Result {
	b, err := json.Marshal(obs)
	if err != nil {
		// The observation types hold only strings, numbers, bools and slices of them.
		panic("tool: marshal observation: " + err.Error())
	}
	return Result{Text: text, IsError: isError, Observation: b}
}

// TextContent is one part of an observation's content.
type TextContent struct {
	Type string `json:"type"` // always "text"
	Text string `json:"text"`
}

// Content wraps text as an observation's content list.
func Content(text string) []TextContent {
	return []TextContent{{Type: "text", Text: text}}
}

// Observation kinds.
const (
	KindTerminal    = "TerminalObservation"
	KindFileEditor  = "FileEditorObservation"
	KindGlob        = "GlobObservation"
	KindGrep        = "GrepObservation"
	KindThink       = "ThinkObservation"
	KindFinish      = "FinishObservation"
	KindTaskTracker = "TaskTrackerObservation"
)

// TerminalObservation answers a terminal call. Content holds the command's output (clipped
// to the output bound); Result.Text adds Metadata.Prefix and Suffix and the status lines.
type TerminalObservation struct {
	Kind     string           `json:"kind"`
	Command  string           `json:"command"`
	ExitCode int              `json:"exit_code"` // -1 while the command still runs, or when unknown
	Timeout  bool             `json:"timeout"`   // the call returned before the command finished
	Metadata TerminalMetadata `json:"metadata"`
	// FullOutputSaveDir is where clipped outputs are saved in full.
	FullOutputSaveDir string        `json:"full_output_save_dir,omitempty"`
	Content           []TextContent `json:"content"`
	IsError           bool          `json:"is_error"`
}

// TerminalMetadata is what the shell reported at its last prompt, plus the notes around the
// output.
type TerminalMetadata struct {
	ExitCode          int    `json:"exit_code"`
	PID               int    `json:"pid"` // the shell's process id
	Username          string `json:"username"`
	Hostname          string `json:"hostname"`
	WorkingDir        string `json:"working_dir"`
	PyInterpreterPath string `json:"py_interpreter_path"`
	Prefix            string `json:"prefix"`
	Suffix            string `json:"suffix"`
}

// FileEditorObservation answers a file_editor call. OldContent and NewContent are the whole
// file before and after an edit, for diff views; both are null for view.
type FileEditorObservation struct {
	Kind       string        `json:"kind"`
	Command    string        `json:"command"`
	Path       string        `json:"path"`
	PrevExist  bool          `json:"prev_exist"`
	OldContent *string       `json:"old_content"`
	NewContent *string       `json:"new_content"`
	Content    []TextContent `json:"content"`
	IsError    bool          `json:"is_error"`
}

// GlobObservation answers a glob call.
type GlobObservation struct {
	Kind       string        `json:"kind"`
	Files      []string      `json:"files"` // absolute paths, newest first
	Pattern    string        `json:"pattern"`
	SearchPath string        `json:"search_path"`
	Truncated  bool          `json:"truncated"`
	Content    []TextContent `json:"content"`
	IsError    bool          `json:"is_error"`
}

// GrepObservation answers a grep call.
type GrepObservation struct {
	Kind           string        `json:"kind"`
	Matches        []string      `json:"matches"` // absolute paths of files with a match, newest first
	Pattern        string        `json:"pattern"`
	SearchPath     string        `json:"search_path"`
	IncludePattern string        `json:"include_pattern,omitempty"`
	Truncated      bool          `json:"truncated"`
	Content        []TextContent `json:"content"`
	IsError        bool          `json:"is_error"`
}

// ThinkObservation answers a think call.
type ThinkObservation struct {
	Kind    string        `json:"kind"`
	Content []TextContent `json:"content"`
	IsError bool          `json:"is_error"`
}

// FinishObservation answers a finish call; its content is the final message.
type FinishObservation struct {
	Kind    string        `json:"kind"`
	Content []TextContent `json:"content"`
	IsError bool          `json:"is_error"`
}

// TaskTrackerObservation answers a task_tracker call with the list as it now stands.
type TaskTrackerObservation struct {
	Kind     string        `json:"kind"`
	Command  string        `json:"command"`
	TaskList []TaskItem    `json:"task_list"`
	Content  []TextContent `json:"content"`
	IsError  bool          `json:"is_error"`
}

// ErrorResult is a failed call of the named tool: the text for the model, and an observation
// of the tool's kind that carries only that text. Tools use their own observation type where
// they know more (the command, the path).
func ErrorResult(name, text string) Result {
	kind := "ErrorObservation"
	if t, ok := Lookup(name); ok {
		kind = t.ObservationKind
	}
	return NewResult(text, true, struct {
		Kind    string        `json:"kind"`
		Content []TextContent `json:"content"`
		IsError bool          `json:"is_error"`
	}{kind, Content(text), true})
}
