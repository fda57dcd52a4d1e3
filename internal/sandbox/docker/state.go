package docker

import (
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/internal/sandbox"
)

// instanceState is what Instance.State holds for this backend.
type instanceState struct {
	ContainerID string `json:"container_id"`
}

// decodeState reads inst.State; an empty one decodes to the zero value (no container known).
func decodeState(inst sandbox.Instance) (instanceState, error) {
	var st instanceState
	if len(inst.State) == 0 || string(inst.State) == "null" {
		return st, nil
	}
	if err := json.Unmarshal(inst.State, &st); err != nil {
		return st, fmt.Errorf("decode docker state of sandbox %s: %w", inst.ID, err)
	}
	return st, nil
}

func (st instanceState) encode() json.RawMessage {
	b, _ := json.Marshal(st)
	return b
}
