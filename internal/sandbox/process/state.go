package process

import (
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/internal/sandbox"
)

// instanceState is what Instance.State holds for this backend: the runtime's pid, and its
// start time so that a recycled pid is never mistaken for the sandbox.
type instanceState struct {
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat, in clock ticks since boot.
	StartTime uint64 `json:"start_time"`
}

// decodeState reads inst.State; ok is false when the instance never recorded a process.
func decodeState(inst sandbox.Instance) (st instanceState, ok bool, err error) {
	if len(inst.State) == 0 || string(inst.State) == "null" {
		return instanceState{}, false, nil
	}
	if err := json.Unmarshal(inst.State, &st); err != nil {
		return instanceState{}, false, fmt.Errorf("decode process state of sandbox %s: %w", inst.ID, err)
	}
	if st.PID <= 0 {
		return instanceState{}, false, nil
	}
	return st, true, nil
}

func (st instanceState) encode() json.RawMessage {
	b, _ := json.Marshal(st)
	return b
}
