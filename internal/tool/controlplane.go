package tool

import (
	"fmt"
	"slices"
	"strings"
)

// ThinkResult answers a think call. The thought itself is in the action; the model only needs
// to know it was taken.
func ThinkResult(ThinkArgs) Result {
	const text = "Your thought has been recorded."
	return NewResult(text, false, ThinkObservation{Kind: KindThink, Content: Content(text)})
}

// FinishResult answers a finish call; the runner ends the run after it.
func FinishResult(a FinishArgs) Result {
	return NewResult(a.Message, false, FinishObservation{Kind: KindFinish, Content: Content(a.Message)})
}

// ApplyTaskTracker runs a task_tracker call against the conversation's current list and
// returns the list to keep (current itself for view) and the result. It is pure: the caller
// stores the list.
func ApplyTaskTracker(current []TaskItem, a TaskTrackerArgs) ([]TaskItem, Result) {
	cmd := a.Command
	if cmd == "" {
		cmd = TaskView
	}
	list := current
	var text string
	switch cmd {
	case TaskPlan:
		list = slices.Clone(a.TaskList)
		for i := range list {
			if list[i].Status == "" {
				list[i].Status = TaskTodo
			}
		}
		text = fmt.Sprintf("The task list now has %d item(s).", len(list))
		if len(list) > 0 {
			text += "\n\n" + RenderTasks(list)
		}
	default:
		if len(list) == 0 {
			text = `There is no task list yet. Create one with command "plan".`
		} else {
			text = RenderTasks(list)
		}
	}
	if list == nil {
		list = []TaskItem{}
	}
	return list, NewResult(text, false, TaskTrackerObservation{
		Kind:     KindTaskTracker,
		Command:  string(cmd),
		TaskList: list,
		Content:  Content(text),
	})
}

// RenderTasks renders the list as a numbered markdown list with a status mark per task and a
// count of what is done.
func RenderTasks(list []TaskItem) string {
	var b strings.Builder
	done := 0
	for _, t := range list {
		if t.Status == TaskDone {
			done++
		}
	}
	fmt.Fprintf(&b, "# Task list (%d of %d done)\n", done, len(list))
	for i, t := range list {
		fmt.Fprintf(&b, "\n%d. %s %s", i+1, statusMark(t.Status), strings.TrimSpace(t.Title))
		if notes := strings.TrimSpace(t.Notes); notes != "" {
			for line := range strings.Lines(notes) {
				b.WriteString("\n   ")
				b.WriteString(strings.TrimRight(line, "\n"))
			}
		}
	}
	return b.String()
}

func statusMark(s TaskStatus) string {
	switch s {
	case TaskDone:
		return "[x]"
	case TaskInProgress:
		return "[~]"
	}
	return "[ ]"
}
