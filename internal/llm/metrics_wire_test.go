package llm_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/llm"
)

// TestSnapshotMatchesWireType: the API's metrics are the snapshot itself (apitypes aliases
// llm's type); the same JSON must survive a trip through apitypes.MetricsSnapshot unchanged.
func TestSnapshotMatchesWireType(t *testing.T) {
	var m llm.Metrics
	m.SetMaxBudget(2.5)
	m.Add("claude-sonnet-4-5", llm.Usage{PromptTokens: 1, CompletionTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 5}, "msg_1")
	ours, _ := json.Marshal(m.Snapshot())
	var wire apitypes.MetricsSnapshot
	dec := json.NewDecoder(bytes.NewReader(ours))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		t.Fatalf("apitypes.MetricsSnapshot does not take our JSON: %v", err)
	}
	theirs, _ := json.Marshal(wire)
	if string(theirs) != string(ours) {
		t.Errorf("through apitypes: %s\nours:             %s", theirs, ours)
	}
}
