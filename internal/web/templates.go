package web

import (
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/tool"
)

// parseTemplates parses the layout and fragments once, then each page on a copy of them.
func (a *App) parseTemplates() (map[string]*template.Template, *template.Template, error) {
	base, err := template.New("base").Funcs(a.funcs()).ParseFS(templateFiles, "templates/layout.html", "templates/fragments.html")
	if err != nil {
		return nil, nil, fmt.Errorf("web templates: %w", err)
	}
	names, err := fs.Glob(templateFiles, "templates/page_*.html")
	if err != nil {
		return nil, nil, fmt.Errorf("web templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, n)
		if err != nil {
			return nil, nil, fmt.Errorf("web template %s: %w", n, err)
		}
		pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/page_"), ".html")] = t
	}
	return pages, base, nil
}

func (a *App) funcs() template.FuncMap {
	return template.FuncMap{
		"lower":        func(v any) string { return strings.ToLower(fmt.Sprint(v)) },
		"statusText":   statusText,
		"execText":     execText,
		"state":        stateOf,
		"taskText":     func(t conversation.TaskStatus) string { return taskText[t] },
		"editText":     func(c string) string { return orDefault(editText[c], c) },
		"taskMark":     func(s tool.TaskStatus) string { return taskMark[string(s)] },
		"changeMark":   func(s string) string { return orDefault(changeMark[s], "?") },
		"roleName":     func(r string) string { return roleName[r] },
		"providerName": func(p string) string { return orDefault(providerName[p], p) },
		"money":        money,
		"num":          num,
		"short":        func(id string) string { return id[:min(8, len(id))] },
		"deref":        deref,
		"iso":          func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"long":         func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04:05 MST") },
		"ago":          func(t time.Time) string { return ago(a.d.Now(), t) },
		"network":      func(s sandbox.Spec) string { return string(sandbox.NetworkOf(s)) },
		"limits":       limitsText,
	}
}

func deref(v any) any {
	switch p := v.(type) {
	case *float64:
		return *p
	case *time.Time:
		return *p
	}
	return v
}

// statusText is a status for people; it takes conversation and sandbox statuses.
func statusText(v any) string {
	s := fmt.Sprint(v)
	switch s {
	case "":
		return "unknown"
	case "STARTING":
		return "Starting"
	case "RUNNING":
		return "Running"
	case "STOPPED":
		return "Stopped"
	case "PAUSED":
		return "Paused"
	case "ERROR":
		return "Error"
	case "MISSING":
		return "Gone"
	}
	if code, err := strconv.Atoi(s); err == nil {
		return http.StatusText(code)
	}
	return strings.ToLower(s)
}

// state is what a conversation is doing, in one word for people: the agent's status while
// its sandbox runs, else the conversation's.
type state struct{ Label, Class string }

func stateOf(conv conversation.Status, exec string) state {
	if conv == conversation.StatusRunning && exec != "" {
		class := map[string]string{"running": "running", "waiting_for_confirmation": "starting", "error": "error", "stuck": "error"}[exec]
		return state{Label: execText(exec), Class: orDefault(class, "stopped")}
	}
	return state{Label: statusText(conv), Class: strings.ToLower(string(conv))}
}

var execTexts = map[string]string{
	"idle": "Idle", "running": "Working", "paused": "Paused", "waiting_for_confirmation": "Waiting for you",
	"finished": "Finished", "error": "Failed", "stuck": "Stuck",
}

func execText(s string) string { return orDefault(execTexts[s], s) }

var taskText = map[conversation.TaskStatus]string{
	conversation.TaskWorking: "Queued", conversation.TaskWaitingForSandbox: "Starting the sandbox",
	conversation.TaskPreparingRepository: "Cloning the repository", conversation.TaskRunningSetupScript: "Running the setup script",
	conversation.TaskSettingUpGitHooks: "Setting up git hooks", conversation.TaskSettingUpSkills: "Reading the skills",
	conversation.TaskStartingConversation: "Starting the agent", conversation.TaskReady: "Ready", conversation.TaskError: "Failed to start",
}

var editText = map[string]string{"view": "Read", "create": "Created", "str_replace": "Edited", "insert": "Inserted into", "undo_edit": "Undid the last edit of"}

var taskMark = map[string]string{"todo": "○", "in_progress": "◐", "done": "●"}

var changeMark = map[string]string{"ADDED": "A", "DELETED": "D", "UPDATED": "M", "MOVED": "R"}

var roleName = map[string]string{"user": "You", "agent": "Agent", "environment": "agentd"}

var providerName = map[string]string{"github": "GitHub", "gitlab": "GitLab", "bitbucket": "Bitbucket", "enterprise_sso": "Self-hosted"}

// money shows a cost in US dollars, with cents for large sums and more digits for small ones.
func money(v float64) string {
	switch {
	case v == 0:
		return "$0.00"
	case v < 0.01:
		return fmt.Sprintf("$%.4f", v)
	case v < 100:
		return fmt.Sprintf("$%.2f", v)
	}
	return "$" + num(int64(v+0.5))
}

// num writes a count with thousands separators.
func num(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ago says how long before now t was, as people say it.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "never"
	case d < time.Minute: // a clock a little ahead, too
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 30*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
	return t.UTC().Format("2 Jan 2006")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// limitsText lists a spec's limits.
func limitsText(l sandbox.Limits) string {
	var parts []string
	if l.MemoryBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d MiB memory", l.MemoryBytes>>20))
	}
	if l.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%g CPU", l.CPUs))
	}
	if l.PIDs > 0 {
		parts = append(parts, num(l.PIDs)+" processes")
	}
	if l.TmpBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d MiB /tmp", l.TmpBytes>>20))
	}
	if l.DiskBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d MiB disk", l.DiskBytes>>20))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
