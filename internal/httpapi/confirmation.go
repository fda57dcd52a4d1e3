package httpapi

import (
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/confirm"
)

// Confirmation mode on the conversation API, at the agent server's routes: the policy, and
// the user's answer to the actions waiting for confirmation.

func (a *API) setConfirmationPolicy(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var req apitypes.SetConfirmationPolicyRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := a.d.Conversations.SetConfirmationPolicy(r.Context(), caller(r).ID, v.ID, policyOf(req.Policy)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

func (a *API) respondToConfirmation(w http.ResponseWriter, r *http.Request) error {
	v, err := a.agentConversation(r)
	if err != nil {
		return err
	}
	var req apitypes.ConfirmationResponseRequest
	if _, err := decodeBody(r, &req); err != nil {
		return err
	}
	reason := ""
	if req.Reason != nil {
		reason = *req.Reason
	}
	if err := a.d.Conversations.RespondToConfirmation(r.Context(), caller(r).ID, v.ID, req.Accept, reason); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.Success{Success: true})
	return nil
}

// policyOf reads a decoded policy object; its kind and threshold were checked when decoded.
func policyOf(p apitypes.ConfirmationPolicy) confirm.Policy {
	out := confirm.Policy{Kind: string(p.Kind)}
	if out.Kind == confirm.KindRisky {
		out = confirm.Risky
		if p.Threshold != nil {
			out.Threshold = confirm.Risk(*p.Threshold)
		}
		if p.ConfirmUnknown != nil {
			out.ConfirmUnknown = *p.ConfirmUnknown
		}
	}
	return out
}

// policyWire shows a policy as clients read it.
func policyWire(p confirm.Policy) apitypes.ConfirmationPolicy {
	if p.IsNever() {
		return apitypes.ConfirmationPolicy{Kind: confirm.KindNever}
	}
	out := apitypes.ConfirmationPolicy{Kind: apitypes.ConfirmationPolicyKind(p.Kind)}
	if p.Kind == confirm.KindRisky {
		out.Threshold, out.ConfirmUnknown = ptr(apitypes.SecurityRisk(p.Threshold)), ptr(p.ConfirmUnknown)
	}
	return out
}
