package kubernetes

import (
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/internal/sandbox"
)

// instanceState is what an Instance carries of a kubernetes sandbox: where its objects are
// and the digest of its runtime's public key, which the control plane pins. The pod's address
// is not in it: a resumed sandbox's pod has another, and it is looked up when a connection is
// made.
type instanceState struct {
	Namespace string `json:"namespace"`
	// Pin is the base64 SHA-256 digest of the runtime certificate's SubjectPublicKeyInfo.
	Pin string `json:"pin"`
}

func (s instanceState) encode() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // two strings always marshal
	}
	return b
}

func decodeState(inst sandbox.Instance) (instanceState, error) {
	var s instanceState
	if len(inst.State) == 0 {
		return s, fmt.Errorf("sandbox %s: the instance has no state", inst.ID)
	}
	if err := json.Unmarshal(inst.State, &s); err != nil {
		return s, fmt.Errorf("sandbox %s: instance state: %w", inst.ID, err)
	}
	return s, nil
}

// endpoint names the runtime of sandbox id. Its host is the certificate's name and resolves
// nowhere: the backend's transport finds the pod (Transport).
func endpoint(id string) string { return fmt.Sprintf("https://%s:%d", certName(id), runtimePort) }

// certName is the DNS name in a sandbox's runtime certificate.
func certName(id string) string { return id + ".sandbox.agentd.invalid" }
