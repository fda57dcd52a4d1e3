package confirm

import (
	"encoding/json"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentd/agentd/internal/tool"
)

// Destructive says why a tool call is known to be destructive whatever the model rated it,
// or "" when it is not: recursive deletes outside the workspace, force pushes, writes to
// system paths, and scripts fetched from the network and run. workspace is the absolute path
// of the conversation's workspace. Terminal commands are read with a shell parser; one that
// does not parse is left to the model's rating.
func Destructive(toolName string, args json.RawMessage, workspace string) string {
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	switch toolName {
	case tool.Terminal:
		return destructiveCommand(a.Command, workspace)
	case tool.FileEditor:
		if a.Command != string(tool.EditorView) && systemPath(a.Path, workspace) {
			return "it writes to a system path (" + a.Path + ")"
		}
	}
	return ""
}

func destructiveCommand(cmd, workspace string) string {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return ""
	}
	var why string
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			why = destructiveCall(n, workspace)
		case *syntax.Redirect:
			switch n.Op {
			case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob:
				if p, _ := text(n.Word); systemPath(p, workspace) {
					why = "it writes to a system path (" + p + ")"
				}
			}
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && fetches(n.X) && interpreter(firstCall(n.Y)) {
				why = "it runs a script fetched from the network"
			}
		}
		return true
	})
	return why
}

// destructiveCall judges one simple command.
func destructiveCall(c *syntax.CallExpr, workspace string) string {
	words := unwrap(c.Args)
	if len(words) == 0 {
		return ""
	}
	name, _ := text(words[0])
	name = path.Base(name)
	args := make([]string, 0, len(words)-1)
	for _, w := range words[1:] {
		s, _ := text(w)
		args = append(args, s)
	}
	switch {
	case name == "rm":
		if recursive(args) {
			for _, t := range operands(args) {
				if outside(t, workspace) {
					return "it deletes recursively outside the workspace (" + t + ")"
				}
			}
		}
	case name == "git":
		if forcePush(args) {
			return "it force-pushes"
		}
	case name == "tee" || name == "cp" || name == "mv" || name == "install" || name == "ln" || name == "rsync":
		ops := operands(args)
		if len(ops) > 0 && (name == "tee" || len(ops) > 1) {
			targets := ops[len(ops)-1:]
			if name == "tee" {
				targets = ops
			}
			for _, t := range targets {
				if systemPath(t, workspace) {
					return "it writes to a system path (" + t + ")"
				}
			}
		}
	case name == "dd":
		for _, a := range args {
			if t, ok := strings.CutPrefix(a, "of="); ok && systemPath(t, workspace) {
				return "it writes to a system path (" + t + ")"
			}
		}
	case strings.HasPrefix(name, "mkfs"):
		return "it formats a file system"
	case interpreter(c):
		for _, w := range words[1:] {
			if fetches(w) {
				return "it runs a script fetched from the network"
			}
		}
	}
	return ""
}

// unwrap drops the commands that run the rest of the line as a command (sudo, env, nohup)
// and the variable assignments env takes.
func unwrap(words []*syntax.Word) []*syntax.Word {
	for len(words) > 0 {
		name, _ := text(words[0])
		switch path.Base(name) {
		case "sudo", "doas", "env", "nohup", "nice", "time", "command", "exec", "xargs":
			words = words[1:]
			for len(words) > 0 {
				s, _ := text(words[0])
				if !strings.HasPrefix(s, "-") && !strings.Contains(s, "=") {
					break
				}
				words = words[1:]
			}
		default:
			return words
		}
	}
	return words
}

// text is a word's literal text, with "$" for each expansion; literal is false when it has one.
func text(w *syntax.Word) (s string, literal bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	literal = true
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				parts(p.Parts)
			default:
				b.WriteString("$")
				literal = false
			}
		}
	}
	parts(w.Parts)
	return b.String(), literal
}

// recursive reports whether rm's flags ask for a recursive delete.
func recursive(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--recursive" || a == "--no-preserve-root" {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR") {
			return true
		}
	}
	return false
}

// operands are the arguments that are not flags.
func operands(args []string) []string {
	var out []string
	flags := true
	for _, a := range args {
		if flags && a == "--" {
			flags = false
			continue
		}
		if flags && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// outside reports whether a delete target may be outside the workspace (or is the workspace
// itself). A path that depends on an expansion or on the home directory counts: it cannot be
// told.
func outside(target, workspace string) bool {
	switch {
	case target == "" || strings.Contains(target, "$") || strings.HasPrefix(target, "~"):
		return true
	case path.IsAbs(target):
		return !strings.HasPrefix(path.Clean(target), strings.TrimRight(workspace, "/")+"/")
	}
	c := path.Clean(target)
	return c == ".." || strings.HasPrefix(c, "../")
}

// systemPrefixes are the directories whose files belong to the system.
var systemPrefixes = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev", "/sys", "/proc", "/var", "/root"}

// harmlessDevices are written to all the time.
var harmlessDevices = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true}

// systemPath reports whether p is a file of the system, not of the workspace.
func systemPath(p, workspace string) bool {
	if !path.IsAbs(p) {
		return false
	}
	c := path.Clean(p)
	ws := strings.TrimRight(workspace, "/")
	if harmlessDevices[c] || strings.HasPrefix(c, "/dev/fd/") || (ws != "" && (c == ws || strings.HasPrefix(c, ws+"/"))) {
		return false
	}
	for _, s := range systemPrefixes {
		if c == s || strings.HasPrefix(c, s+"/") {
			return true
		}
	}
	return false
}

// forcePush reports whether git's arguments are a push that may overwrite remote history.
func forcePush(args []string) bool {
	push := false
	for _, a := range args {
		switch {
		case !push:
			push = a == "push"
		case strings.HasPrefix(a, "--force"), a == "-f":
			return true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f"):
			return true
		case strings.HasPrefix(a, "+"):
			return true // a +refspec forces that ref
		}
	}
	return false
}

// fetches reports whether a node runs curl or wget somewhere in it.
func fetches(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			if words := unwrap(c.Args); len(words) > 0 {
				name, _ := text(words[0])
				if b := path.Base(name); b == "curl" || b == "wget" {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// interpreters run the script they are given on their standard input or as an argument.
var interpreters = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true,
	"python": true, "python3": true, "perl": true, "ruby": true, "node": true, "eval": true, "source": true, ".": true}

func interpreter(c *syntax.CallExpr) bool {
	if c == nil {
		return false
	}
	words := unwrap(c.Args)
	if len(words) == 0 {
		return false
	}
	name, _ := text(words[0])
	return interpreters[path.Base(name)]
}

// firstCall is the first simple command of a pipeline's side.
func firstCall(s *syntax.Stmt) *syntax.CallExpr {
	var c *syntax.CallExpr
	syntax.Walk(s, func(n syntax.Node) bool {
		if c != nil {
			return false
		}
		if call, ok := n.(*syntax.CallExpr); ok {
			c = call
			return false
		}
		return true
	})
	return c
}
