package confirm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Kinds of policies, OpenHands' class names, which clients send and read as "kind".
const (
	KindNever  = "NeverConfirm"
	KindAlways = "AlwaysConfirm"
	KindRisky  = "ConfirmRisky"
)

// Policy says which actions wait for the user's confirmation. The zero Policy never
// confirms. Its JSON is OpenHands': {"kind": "ConfirmRisky", "threshold": "HIGH",
// "confirm_unknown": true}, threshold and confirm_unknown only for ConfirmRisky.
type Policy struct {
	Kind string
	// Threshold is the lowest risk that waits, for ConfirmRisky.
	Threshold Risk
	// ConfirmUnknown makes unrated actions wait, for ConfirmRisky.
	ConfirmUnknown bool
}

// Never, Always and Risky are the three policies; Risky with OpenHands' defaults (HIGH, and
// unrated actions wait).
var (
	Never  = Policy{Kind: KindNever}
	Always = Policy{Kind: KindAlways}
	Risky  = Policy{Kind: KindRisky, Threshold: High, ConfirmUnknown: true}
)

// Needs reports whether an action of that risk waits for the user.
func (p Policy) Needs(r Risk) bool {
	switch p.Kind {
	case KindAlways:
		return true
	case KindRisky:
		if r == Unknown || rank[r] == 0 {
			return p.ConfirmUnknown
		}
		return rank[r] >= rank[p.Threshold]
	}
	return false
}

// IsNever reports whether the policy never confirms.
func (p Policy) IsNever() bool { return p.Kind == "" || p.Kind == KindNever }

// ErrInvalid: a policy object that is not one of the three, or a threshold that is no risk.
// Its wrapping error says what is wrong, in words fit for the client.
var ErrInvalid = errors.New("invalid confirmation policy")

type wirePolicy struct {
	Kind           string `json:"kind"`
	Threshold      *Risk  `json:"threshold,omitempty"`
	ConfirmUnknown *bool  `json:"confirm_unknown,omitempty"`
}

func (p Policy) MarshalJSON() ([]byte, error) {
	w := wirePolicy{Kind: p.Kind}
	if w.Kind == "" {
		w.Kind = KindNever
	}
	if p.Kind == KindRisky {
		w.Threshold, w.ConfirmUnknown = &p.Threshold, &p.ConfirmUnknown
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a policy object. The kind may be given with OpenHands' module path
// (openhands.sdk.security.confirmation_policy.ConfirmRisky), as some clients send it.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var w wirePolicy
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: must be an object with a kind", ErrInvalid)
	}
	kind := w.Kind[strings.LastIndexByte(w.Kind, '.')+1:]
	switch kind {
	case KindNever, KindAlways:
		*p = Policy{Kind: kind}
	case KindRisky:
		*p = Risky
		if w.Threshold != nil {
			if err := w.Threshold.valid(); err != nil {
				return fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			p.Threshold = *w.Threshold
		}
		if w.ConfirmUnknown != nil {
			p.ConfirmUnknown = *w.ConfirmUnknown
		}
	default:
		return fmt.Errorf("%w: kind must be NeverConfirm, AlwaysConfirm or ConfirmRisky, not %q", ErrInvalid, w.Kind)
	}
	return nil
}

// FromSettings is the policy a user's settings choose, as OpenHands' app server chooses it:
// without confirmation_mode none; with it, ConfirmRisky when the security analyzer is the
// LLM's (the model rates each action), else AlwaysConfirm.
func FromSettings(confirmationMode *bool, securityAnalyzer *string) Policy {
	if confirmationMode == nil || !*confirmationMode {
		return Never
	}
	if securityAnalyzer != nil && strings.EqualFold(*securityAnalyzer, "llm") {
		return Risky
	}
	return Always
}
