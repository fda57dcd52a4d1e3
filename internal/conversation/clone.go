package conversation

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/runtime/runtimeclient"
)

// clone clones the repository into the workspace, on the branch asked for, showing git's
// progress on the start task. It clones into a hidden directory first and renames it, so
// that a clone cut short (a restart) is never taken for a whole one; a clone already there
// (a sub-conversation in its parent's sandbox, a resumed start) is kept as it is.
func (s *Service) clone(ctx context.Context, t *StartTask, w *workspaceRepo) error {
	parent, tmp := path.Dir(w.dir), ".agentd-clone-"+w.name
	probe := "cd -- " + shellQuote(parent) + " && if [ -d " + shellQuote(w.name+"/.git") + " ]; then echo clone; git -C " +
		shellQuote(w.name) + " remote get-url origin; elif [ -e " + shellQuote(w.name) + " ]; then echo other; else echo none; fi"
	res, err := w.rt.Run(ctx, runtimeclient.CommandRequest{Command: probe, TimeoutSeconds: 60, Env: gitEnv})
	if err != nil {
		return fmt.Errorf("look for a clone of %s: %w", w.repo, err)
	}
	found, origin, _ := strings.Cut(strings.TrimSpace(res.Output), "\n")
	switch found {
	case "clone":
		// The relay's port may have changed since; the path names the repository.
		if strings.HasSuffix(strings.TrimSpace(origin), "/"+w.provider+"/"+w.repo+".git") {
			return nil
		}
		return &RepositoryError{Msg: fmt.Sprintf("the workspace has %s already, a clone of another repository than %s", w.name, w.repo)}
	case "other":
		return &RepositoryError{Msg: fmt.Sprintf("the workspace has %s already, and it is not a clone of %s", w.name, w.repo)}
	}

	args := "git clone --progress"
	if w.branch != "" {
		args += " --branch " + shellQuote(w.branch)
	}
	cmd := "cd -- " + shellQuote(parent) + " && rm -rf -- " + shellQuote(tmp) + " && " + args + " -- " + shellQuote(w.url) + " " +
		shellQuote(tmp) + " && mv -- " + shellQuote(tmp) + " " + shellQuote(w.name)
	timeout := s.o.Repository.CloneTimeout
	if timeout <= 0 {
		timeout = defaultRepositoryTimeout
	}
	progress := &cloneProgress{}
	res, err = w.rt.RunStream(ctx, runtimeclient.CommandRequest{Command: cmd, TimeoutSeconds: timeoutSeconds(timeout), Env: gitEnv},
		func(out string) {
			if p, changed := progress.feed(out); changed {
				t.Detail = "Cloning " + w.repo + ": " + p
				if err := s.saveTaskProgress(ctx, t); err != nil {
					s.log.Warn("save clone progress", "task_id", t.ID, "err", err)
				}
			}
		})
	if err != nil {
		return fmt.Errorf("clone %s: %w", w.repo, err)
	}
	switch {
	case res.TimedOut:
		return &RepositoryError{Msg: fmt.Sprintf("cloning %s took longer than %v", w.repo, timeout)}
	case res.ExitCode == 0:
		return nil
	case w.branch != "" && missingBranch.MatchString(res.Output):
		return &RepositoryError{Msg: fmt.Sprintf("branch %q not found in %s", w.branch, w.repo)}
	}
	return &RepositoryError{Msg: "cloning " + w.repo + " failed: " + cloneFailure(res.Output)}
}

// defaultRepositoryTimeout bounds a clone and a setup script that the options leave open.
const defaultRepositoryTimeout = 10 * time.Minute

// missingBranch is what git clone says of a --branch the remote lacks.
var missingBranch = regexp.MustCompile(`(?m)Remote branch .* not found in upstream`)

// cloneFailure picks what git said of a failed clone: the remote's message and git's fatal
// line. None of it holds a secret: git in the sandbox never had one.
func cloneFailure(out string) string {
	var picked []string
	for l := range strings.FieldsFuncSeq(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "remote: ") || strings.HasPrefix(l, "fatal: ") || strings.HasPrefix(l, "error: ") {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		return lastLines(out, 2)
	}
	return strings.Join(picked[max(len(picked)-3, 0):], "; ")
}

// cloneProgress reads git's progress lines (ended by \r while they count, \n when done).
type cloneProgress struct {
	partial string
	last    string
}

var progressLine = regexp.MustCompile(`(Receiving objects|Resolving deltas): +(\d+)% \((\d+)/(\d+)\)`)

// feed takes more of git's output and returns the latest progress, and whether it changed
// (a new stage or a new percentage: at most a few hundred changes, however large the clone).
func (p *cloneProgress) feed(out string) (string, bool) {
	text := p.partial + out
	cut := strings.LastIndexAny(text, "\r\n")
	if cut < 0 {
		p.partial = text[max(len(text)-512, 0):]
		return p.last, false
	}
	p.partial = text[cut+1:]
	var latest string
	for l := range strings.FieldsFuncSeq(text[:cut], func(r rune) bool { return r == '\n' || r == '\r' }) {
		if m := progressLine.FindStringSubmatch(l); m != nil {
			latest = strings.ToLower(m[1][:1]) + m[1][1:] + " " + m[2] + "% (" + m[3] + "/" + m[4] + ")"
		}
	}
	if latest == "" || latest == p.last {
		return p.last, false
	}
	changed := progressKey(latest) != progressKey(p.last)
	p.last = latest
	return latest, changed
}

// progressKey is a progress line without its counts: the stage and percentage.
func progressKey(s string) string {
	stage, _, _ := strings.Cut(s, " (")
	return stage
}
