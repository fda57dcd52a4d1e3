// Package confirm decides which of the agent's actions wait for a person: the security risk
// each action is rated (by the model, raised for known-destructive commands), and the
// confirmation policies, named and shaped as OpenHands' (NeverConfirm, AlwaysConfirm,
// ConfirmRisky), that say which risks need the user's confirmation before the action runs.
package confirm

import "fmt"

// Risk is an action's security risk, as OpenHands' SecurityRisk enum spells it.
type Risk string

// Risks. Unknown is a call the model did not rate, or rated with a word that is none of the
// others; it is not ordered against them.
const (
	Unknown Risk = "UNKNOWN"
	Low     Risk = "LOW"
	Medium  Risk = "MEDIUM"
	High    Risk = "HIGH"
)

// rank orders the rated risks; Unknown has none.
var rank = map[Risk]int{Low: 1, Medium: 2, High: 3}

// ParseRisk reads a model's rating. Anything that is not LOW, MEDIUM or HIGH is Unknown:
// a rating the model cannot give is no rating.
func ParseRisk(s string) Risk {
	if _, ok := rank[Risk(s)]; ok {
		return Risk(s)
	}
	return Unknown
}

// Values lists the ratings the model may give, for the tool schemas' enum.
func Values() []string { return []string{string(Low), string(Medium), string(High)} }

// RiskParam is the "security_risk" parameter added to the schema of every tool that changes
// something, as OpenHands' LLM security analyzer adds it: the model rates each call.
func RiskParam() map[string]any {
	return map[string]any{
		"type": "string",
		"enum": Values(),
		"description": "Your assessment of the safety risk of this call. LOW: reads, or changes only inside the workspace that are easy to undo. " +
			"MEDIUM: changes that are harder to undo, or that reach outside the workspace (installing packages, network calls). " +
			"HIGH: destructive or security-sensitive actions (deleting data, force-pushing, changing system files, running downloaded scripts).",
	}
}

func (r Risk) valid() error {
	if _, ok := rank[r]; !ok {
		return fmt.Errorf("threshold must be LOW, MEDIUM or HIGH, not %q", string(r))
	}
	return nil
}
