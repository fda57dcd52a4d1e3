package event

// KindSkillWarning is agentd's own kind for a skill file skipped at the start.
const KindSkillWarning = "SkillWarningEvent"

// SkillWarningEvent records a file of the workspace's skills that was not loaded when the
// conversation started (malformed, too large, of a kind agentd does not use), so that the user
// learns why the agent was not given it; the conversation starts anyway. It is agentd's own
// kind: OpenHands clients ignore kinds they do not know, and the model never sees it.
type SkillWarningEvent struct {
	Base
	// Path is the file's path relative to the workspace.
	Path   string `json:"path"`
	Detail string `json:"detail"`
}

func (*SkillWarningEvent) eventKind() string { return KindSkillWarning }
