package tool

import (
	"strings"

	"github.com/agentd/agentd/internal/wire"
)

// TerminalArgs are the arguments of the terminal tool.
type TerminalArgs struct {
	Command string   `json:"command" wire:"required" doc:"The bash command to run: exactly one command per call (chain steps with && or ;). An empty string fetches more output of the command still running. With is_input=true: text to type into the running program, or one special key: C-c, C-d, C-<letter>, UP, DOWN, LEFT, RIGHT, HOME, END, PGUP, PGDN, TAB, ESC, BS, ENTER."`
	IsInput bool     `json:"is_input,omitempty" doc:"Send command as input to the program that is still running instead of starting a new command."`
	Timeout *float64 `json:"timeout,omitempty" wire:"min=0" doc:"Hard limit in seconds on how long to wait for the command, within the bound on one call (a few minutes). When unset, the call returns once the command prints nothing new for a while. Either way an unfinished command keeps running."`
	Reset   bool     `json:"reset,omitempty" doc:"Kill the shell and everything it runs and start a fresh session (cannot be combined with is_input). If command is also given, it runs in the new session."`
}

// FileEditorCommand is the file_editor operation.
type FileEditorCommand string

// File editor commands.
const (
	EditorView       FileEditorCommand = "view"
	EditorCreate     FileEditorCommand = "create"
	EditorStrReplace FileEditorCommand = "str_replace"
	EditorInsert     FileEditorCommand = "insert"
	EditorUndoEdit   FileEditorCommand = "undo_edit"
)

// EnumValues lists the commands for wire.
func (FileEditorCommand) EnumValues() []string {
	return []string{"view", "create", "str_replace", "insert", "undo_edit"}
}

// FileEditorArgs are the arguments of the file_editor tool. Optional strings are pointers so
// that an empty string (a valid file_text or new_str) differs from a missing one.
type FileEditorArgs struct {
	Command    FileEditorCommand `json:"command" wire:"required" doc:"The operation: view, create, str_replace, insert or undo_edit."`
	Path       string            `json:"path" wire:"required" doc:"Absolute path of the file or directory, e.g. /workspace/project/main.go."`
	FileText   *string           `json:"file_text,omitempty" doc:"Required for create: the whole content of the new file."`
	OldStr     *string           `json:"old_str,omitempty" doc:"Required for str_replace: the exact text to replace, whitespace included. It must occur exactly once in the file; include a few lines of context to make it unique."`
	NewStr     *string           `json:"new_str,omitempty" doc:"For str_replace: the replacement text (an empty string deletes old_str). For insert: the text to insert."`
	InsertLine *int              `json:"insert_line,omitempty" wire:"min=0" doc:"Required for insert: new_str goes after this line number (0 inserts at the top of the file)."`
	ViewRange  []int             `json:"view_range,omitempty" wire:"minlen=2,maxlen=2" doc:"Optional for view of a file: [start, end] line numbers, 1-based and inclusive; [start, -1] shows from start to the end of the file."`
}

// GlobArgs are the arguments of the glob tool.
type GlobArgs struct {
	Pattern string `json:"pattern" wire:"required,minlen=1" doc:"The glob pattern, matched against paths relative to path: * and ? stay within a directory, ** spans directories, {a,b} gives alternatives. Examples: **/*.go, src/**/*.{ts,tsx}, *.md."`
	Path    string `json:"path,omitempty" doc:"Absolute path of the directory to search. Defaults to the workspace."`
}

// GrepArgs are the arguments of the grep tool.
type GrepArgs struct {
	Pattern string `json:"pattern" wire:"required,minlen=1" doc:"Regular expression (RE2 syntax, as in Go or ripgrep) to search file contents for, line by line. Prefix with (?i) to ignore case."`
	Path    string `json:"path,omitempty" doc:"Absolute path of the directory (or file) to search. Defaults to the workspace."`
	Include string `json:"include,omitempty" doc:"Only search files whose name matches this glob, e.g. *.go or *.{ts,tsx}. A glob with a / is matched against the path relative to path."`
}

// ThinkArgs are the arguments of the think tool.
type ThinkArgs struct {
	Thought string `json:"thought" wire:"required" doc:"Your reasoning."`
}

// FinishArgs are the arguments of the finish tool.
type FinishArgs struct {
	Message string `json:"message" wire:"required" doc:"The final message to the user: what was done, what was not, and anything they should check."`
}

// TaskTrackerCommand is the task_tracker operation.
type TaskTrackerCommand string

// Task tracker commands.
const (
	TaskView TaskTrackerCommand = "view"
	TaskPlan TaskTrackerCommand = "plan"
)

// EnumValues lists the commands for wire.
func (TaskTrackerCommand) EnumValues() []string { return []string{"view", "plan"} }

// TaskStatus is the state of one task.
type TaskStatus string

// Task states.
const (
	TaskTodo       TaskStatus = "todo"
	TaskInProgress TaskStatus = "in_progress"
	TaskDone       TaskStatus = "done"
)

// EnumValues lists the states for wire.
func (TaskStatus) EnumValues() []string { return []string{"todo", "in_progress", "done"} }

// TaskItem is one entry of the task list.
type TaskItem struct {
	Title  string     `json:"title" wire:"required,minlen=1" doc:"A short, specific description of the task."`
	Notes  string     `json:"notes" doc:"Details, findings or the reason a task is blocked."`
	Status TaskStatus `json:"status" wire:"default=todo" doc:"todo, in_progress or done."`
}

// TaskTrackerArgs are the arguments of the task_tracker tool.
type TaskTrackerArgs struct {
	Command  TaskTrackerCommand `json:"command" wire:"default=view" doc:"view shows the current list; plan replaces it with task_list."`
	TaskList []TaskItem         `json:"task_list,omitempty" doc:"Required for plan: the complete new list, every task including those already done, in order."`
}

// The argument structs reject keys they do not know, so that a misspelt argument is reported
// to the model instead of silently ignored.
func (TerminalArgs) WireStrict()    {}
func (FileEditorArgs) WireStrict()  {}
func (GlobArgs) WireStrict()        {}
func (GrepArgs) WireStrict()        {}
func (ThinkArgs) WireStrict()       {}
func (FinishArgs) WireStrict()      {}
func (TaskItem) WireStrict()        {}
func (TaskTrackerArgs) WireStrict() {}

// ValidateWire rejects combinations the terminal cannot honour.
func (a *TerminalArgs) ValidateWire(c *wire.Checker) {
	if a.Reset && a.IsInput {
		c.ValueError("reset cannot be combined with is_input", "reset")
	}
	if strings.ContainsRune(a.Command, 0) {
		c.ValueError("command must not contain NUL bytes", "command")
	}
}

// ValidateWire rejects paths no file system takes. Which optional arguments each command
// needs is checked by the editor, which words the message for that command.
func (a *FileEditorArgs) ValidateWire(c *wire.Checker) {
	if strings.ContainsRune(a.Path, 0) {
		c.ValueError("path must not contain NUL bytes", "path")
	}
}

// ValidateWire requires a list for plan.
func (a *TaskTrackerArgs) ValidateWire(c *wire.Checker) {
	if a.Command == TaskPlan && a.TaskList == nil {
		c.ValueError("task_list is required for command plan", "task_list")
	}
}
