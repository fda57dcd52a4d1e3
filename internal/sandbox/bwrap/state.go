package bwrap

import (
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/internal/sandbox"
)

// instanceState is what Instance.State holds for this backend.
type instanceState struct {
	// PID is the sandbox's first process (bwrap, outside the sandbox's PID namespace), and
	// StartTime its field 22 of /proc/<pid>/stat, so that a recycled pid is never taken for
	// it. They serve to reap it; the cgroup is what says whether the sandbox runs.
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"`
	// SlirpPID and SlirpStartTime are the same for the first process of slirp4netns, where
	// the network is egress.
	SlirpPID       int    `json:"slirp_pid,omitempty"`
	SlirpStartTime uint64 `json:"slirp_start_time,omitempty"`
	// Cgroup is the sandbox's cgroup path relative to each hierarchy's root.
	Cgroup string `json:"cgroup,omitempty"`
}

// decodeState reads inst.State; ok is false when the instance recorded nothing.
func decodeState(inst sandbox.Instance) (st instanceState, ok bool, err error) {
	if len(inst.State) == 0 || string(inst.State) == "null" {
		return instanceState{}, false, nil
	}
	if err := json.Unmarshal(inst.State, &st); err != nil {
		return instanceState{}, false, fmt.Errorf("decode bwrap state of sandbox %s: %w", inst.ID, err)
	}
	return st, true, nil
}

func (st instanceState) encode() json.RawMessage {
	b, _ := json.Marshal(st)
	return b
}
