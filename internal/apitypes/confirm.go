package apitypes

// SecurityRisk is an action's security risk as a policy's threshold names it.
type SecurityRisk string

// EnumValues lists the accepted values: UNKNOWN is no threshold.
func (SecurityRisk) EnumValues() []string { return []string{"LOW", "MEDIUM", "HIGH"} }

// ConfirmationPolicyKind names one of OpenHands' confirmation policies.
type ConfirmationPolicyKind string

// EnumValues lists the accepted values.
func (ConfirmationPolicyKind) EnumValues() []string {
	return []string{"NeverConfirm", "AlwaysConfirm", "ConfirmRisky"}
}

// ConfirmationPolicy says which of the agent's actions wait for the user's confirmation, as
// OpenHands' agent server spells it.
type ConfirmationPolicy struct {
	Kind           ConfirmationPolicyKind `json:"kind" wire:"required" doc:"NeverConfirm runs every action; AlwaysConfirm makes every action but finish and think wait; ConfirmRisky makes actions wait from threshold up."`
	Threshold      *SecurityRisk          `json:"threshold,omitempty" doc:"ConfirmRisky: the lowest risk that waits (HIGH when absent)."`
	ConfirmUnknown *bool                  `json:"confirm_unknown,omitempty" doc:"ConfirmRisky: whether an action the model did not rate waits (true when absent)."`
}

// SetConfirmationPolicyRequest changes a conversation's confirmation policy.
type SetConfirmationPolicyRequest struct {
	Policy ConfirmationPolicy `json:"policy" wire:"required"`
}

// ConfirmationResponseRequest accepts or rejects the actions waiting for confirmation.
type ConfirmationResponseRequest struct {
	Accept bool    `json:"accept" wire:"required"`
	Reason *string `json:"reason" doc:"Why the actions are rejected; the agent's model reads it. \"User rejected the action.\" when absent."`
}
