package event

// KindUserReject is OpenHands' kind for an action the user rejected.
const KindUserReject = "UserRejectObservation"

// StateConfirmationPolicy is the state update key of the conversation's confirmation policy:
// its value is the policy object ({"kind": "ConfirmRisky", ...}).
const StateConfirmationPolicy = "confirmation_policy"

// UserRejectObservation answers an action that waited for the user's confirmation and was
// rejected: the model sees the reason in place of the action's result.
type UserRejectObservation struct {
	Base
	ActionID        string `json:"action_id"`
	ToolName        string `json:"tool_name"`
	ToolCallID      string `json:"tool_call_id"`
	RejectionReason string `json:"rejection_reason"`
	// RejectionSource is "user": OpenHands also has "hook", which agentd never records.
	RejectionSource string `json:"rejection_source"`
}

func (*UserRejectObservation) eventKind() string { return KindUserReject }

// LLMText is what the model is shown in place of the action's result.
func (o *UserRejectObservation) LLMText() string { return "Action rejected: " + o.RejectionReason }
