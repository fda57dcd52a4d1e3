package conversation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/skill"
)

// SkillRuntime is the ability of a sandbox's runtime to find the skill files of its
// workspace. The runtime the Runtimes option returns has it; one without it gives the
// conversation the user's skills only.
type SkillRuntime interface {
	SkillFiles(ctx context.Context, req runtimeclient.SkillFilesRequest) (runtimeclient.SkillFilesResult, error)
}

// setUpSkills is the SETTING_UP_SKILLS step. It reads the user's skills and those the
// workspace keeps (AGENTS.md and the like, .agents/skills, .openhands/skills and the legacy
// .openhands/microagents, in the repository's directory and at the workspace's root) and
// stores them with the conversation, so that the agent is given the same skills whenever it
// runs, whatever the files say by then. A file that is no usable skill is skipped with a
// SkillWarningEvent; it does not stop the conversation.
func (s *Service) setUpSkills(ctx context.Context, t *StartTask, v Conversation) error {
	t.Status = TaskSettingUpSkills
	if err := s.saveTask(ctx, t); err != nil {
		return err
	}
	if s.o.Skills == nil {
		return nil
	}
	user, err := skill.All(ctx, s.o.Skills, t.OwnerID)
	if err != nil {
		return fmt.Errorf("set up skills: %w", err)
	}
	found, truncated, err := s.workspaceSkillFiles(ctx, t.OwnerID, t.SandboxID, v.WorkDir,
		skillFilesRequest(skillDirsOf(v.WorkDir, v.SelectedRepository)))
	var early []skill.Warning
	var old *runtimeclient.StatusError
	if errors.As(err, &old) && old.StatusCode == http.StatusNotFound {
		// A sandbox started by an earlier version of agentd runs a runtime without the route:
		// the conversation starts with the user's skills.
		s.log.Warn("the sandbox's runtime cannot list skill files", "sandbox_id", t.SandboxID)
		early = append(early, skill.Warning{Path: ".", Problem: "the sandbox runs an older agentd runtime that cannot read " +
			"the workspace's skills; start the conversation in a new sandbox to have them"})
		err = nil
	}
	if err != nil {
		return fmt.Errorf("set up skills: %w", err)
	}
	ws, warnings := skill.Load(found)
	warnings = append(early, warnings...)
	if truncated {
		warnings = append(warnings, truncatedWarning())
	}
	all := skill.Merge(user, ws)
	if err := s.o.Skills.PutConversationSkills(ctx, t.ConversationID, all); err != nil {
		return fmt.Errorf("set up skills: %w", err)
	}
	s.log.Info("skills loaded", "conversation_id", t.ConversationID, "user", len(user), "workspace", len(ws), "skipped", len(warnings))
	return s.recordSkillWarnings(ctx, v, warnings)
}

// truncatedWarning says that a workspace held more skill files than are read.
func truncatedWarning() skill.Warning {
	return skill.Warning{Path: ".", Problem: fmt.Sprintf(
		"the workspace holds more skill files than a conversation loads (%d files, %d bytes in all): the rest were not read",
		skill.MaxFiles, skill.MaxTotalBytes)}
}

// skillFilesRequest asks for the skill files of dirs, relative to the workspace, in order.
func skillFilesRequest(dirs []string) runtimeclient.SkillFilesRequest {
	req := runtimeclient.SkillFilesRequest{
		Dirs: dirs, SkillDirs: skill.Dirs, Exclude: skill.Excluded,
		MaxFiles: skill.MaxFiles, MaxFileBytes: skill.MaxFileBytes, MaxTotalBytes: skill.MaxTotalBytes,
	}
	for _, rf := range skill.RootFiles {
		req.RootFiles = append(req.RootFiles, rf.File)
	}
	return req
}

// workspaceSkillFiles asks the sandbox's runtime for the skill files req names. Their
// directories are named from base, relative to the workspace: where the agent that reads them
// works.
func (s *Service) workspaceSkillFiles(ctx context.Context, ownerID, sandboxID, base string, req runtimeclient.SkillFilesRequest) ([]skill.Found, bool, error) {
	if s.o.Runtimes == nil || sandboxID == "" {
		return nil, false, nil
	}
	rt, err := s.o.Runtimes(ctx, ownerID, sandboxID)
	if err != nil {
		return nil, false, fmt.Errorf("reach the sandbox: %w", err)
	}
	sr, ok := rt.(SkillRuntime)
	if !ok {
		s.log.Warn("the sandbox's runtime cannot list skill files; the workspace's skills are not loaded", "sandbox_id", sandboxID)
		return nil, false, nil
	}
	res, err := sr.SkillFiles(ctx, req)
	if err != nil {
		return nil, false, &skillFilesError{err}
	}
	found := make([]skill.Found, 0, len(res.Files))
	for _, f := range res.Files {
		dir := strings.TrimPrefix(strings.TrimPrefix(f.Dir, base), "/")
		found = append(found, skill.Found{Dir: dir, SkillDir: f.SkillDir, Path: f.Path, Data: f.Content,
			TooLarge: f.TooLarge, Size: f.Size, Problem: f.Problem})
	}
	return found, res.Truncated, nil
}

// skillDirsOf returns where a workspace's skills are looked for, relative to the workspace: the
// directory a repository named owner/name is cloned into (<workDir>/name), first, as the
// repository's own root, then the conversation's working directory itself.
func skillDirsOf(workDir string, repo *string) []string {
	if repo == nil {
		return []string{workDir}
	}
	name := strings.TrimSuffix(path.Base(strings.Trim(*repo, "/")), ".git")
	if name == "" || name == "." || name == ".." || name == "/" || strings.ContainsRune(name, 0) {
		return []string{workDir}
	}
	return []string{path.Join(workDir, name), workDir}
}

// recordSkillWarnings records one SkillWarningEvent per skipped file, unless an earlier start
// of the same conversation (cut short by a restart) recorded them already.
func (s *Service) recordSkillWarnings(ctx context.Context, c Conversation, warnings []skill.Warning) error {
	if len(warnings) == 0 {
		return nil
	}
	n, err := s.o.Events.CountEvents(ctx, c.OwnerID, event.Filter{ConversationID: c.ID, Kind: event.KindSkillWarning})
	if err != nil || n > 0 {
		return err
	}
	evs := make([]event.Event, 0, len(warnings))
	for _, w := range warnings {
		s.log.Info("skill skipped", "conversation_id", c.ID, "path", w.Path, "problem", w.Problem)
		ev, err := event.New(s.o.NewEventID(), s.o.Now(), event.SourceEnvironment,
			&event.SkillWarningEvent{Path: w.Path, Detail: w.Problem})
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	return s.record(ctx, c, evs)
}

// skillsOf returns the skills the conversation was started with; none when they cannot be
// read (the agent then runs without them, and the log says why).
func (s *Service) skillsOf(ctx context.Context, convID string) []skill.Skill {
	if s.o.Skills == nil {
		return nil
	}
	skills, err := s.o.Skills.ConversationSkills(ctx, convID)
	if err != nil {
		logRunErr(ctx, s.log.With("conversation_id", convID), "agent: read the conversation's skills", err)
	}
	return skills
}

// skillFilesError: the runtime did not answer the request for the skill files.
type skillFilesError struct{ err error }

func (e *skillFilesError) Error() string { return e.err.Error() }
func (e *skillFilesError) Unwrap() error { return e.err }

// ClientMessage is the start task's detail.
func (e *skillFilesError) ClientMessage() string {
	return "the skills of the workspace could not be read from the sandbox"
}

// Skills returns the skills the owner's conversation's agent is given: those stored when it
// started (none before its SETTING_UP_SKILLS step).
func (s *Service) Skills(ctx context.Context, ownerID, convID string) ([]skill.Skill, error) {
	if _, err := s.o.Store.GetConversation(ctx, ownerID, convID); err != nil {
		return nil, err
	}
	if s.o.Skills == nil {
		return nil, nil
	}
	skills, err := s.o.Skills.ConversationSkills(ctx, convID)
	if err != nil {
		return nil, fmt.Errorf("skills of conversation %s: %w", convID, err)
	}
	return skills, nil
}

// SandboxSkills are the skills an agent server's POST /api/skills loads in a sandbox: the
// owner's own skills and those of a directory of the sandbox's workspace.
type SandboxSkills struct {
	User, Project []skill.Skill
	// Merged is what a conversation in the sandbox would be given of them: a project skill
	// replaces a user skill of the same name.
	Merged []skill.Skill
	// Warnings are the project's skill files that are no usable skill.
	Warnings []skill.Warning
}

// LoadSandboxSkills reads the owner's skills (when user) and the skill files of projectDir in
// the sandbox's workspace (when project), as a conversation's SETTING_UP_SKILLS step reads
// them. projectDir is absolute inside the workspace or relative to it; "" is the workspace.
// The sandbox must be RUNNING.
func (s *Service) LoadSandboxSkills(ctx context.Context, ownerID, sandboxID string, user, project bool, projectDir string) (SandboxSkills, error) {
	sb, err := s.o.Sandboxes.Get(ctx, ownerID, sandboxID)
	if err != nil {
		return SandboxSkills{}, err
	}
	var out SandboxSkills
	if user && s.o.Skills != nil {
		if out.User, err = skill.All(ctx, s.o.Skills, ownerID); err != nil {
			return SandboxSkills{}, fmt.Errorf("skills of sandbox %s: %w", sandboxID, err)
		}
	}
	if project {
		dir, err := workspaceDir(sb.Instance.Workspace, projectDir)
		if err != nil {
			return SandboxSkills{}, err
		}
		req := skillFilesRequest([]string{dir})
		found, truncated, err := s.workspaceSkillFiles(ctx, ownerID, sandboxID, "", req)
		if err != nil {
			return SandboxSkills{}, fmt.Errorf("skills of sandbox %s: %w", sandboxID, err)
		}
		out.Project, out.Warnings = skill.Load(found)
		if truncated {
			out.Warnings = append(out.Warnings, truncatedWarning())
		}
	}
	out.Merged = skill.Merge(out.User, out.Project)
	return out, nil
}

// workspaceDir turns a directory a client names, absolute inside the workspace or relative to
// it, into a path relative to the workspace ("" for the workspace itself).
func workspaceDir(workspace, dir string) (string, error) {
	if strings.ContainsRune(dir, 0) {
		return "", &FieldError{Field: "project_dir", Msg: "the path must not contain NUL bytes"}
	}
	ws := path.Clean(workspace)
	if !path.IsAbs(dir) {
		dir = path.Join(ws, dir)
	}
	dir = path.Clean(dir)
	if dir == ws {
		return "", nil
	}
	if rel, ok := strings.CutPrefix(dir, strings.TrimSuffix(ws, "/")+"/"); ok && path.IsAbs(ws) {
		return rel, nil
	}
	return "", &FieldError{Field: "project_dir", Msg: "the path " + dir + " is outside the workspace " + workspace}
}
