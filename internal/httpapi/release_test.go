package httpapi

import (
	"encoding/json"
	"testing"
)

// TestReleaseMemoryEmptiesCaches: the API's release empties the session keys it opened and
// the metrics it decoded.
func TestReleaseMemoryEmptiesCaches(t *testing.T) {
	a := &API{}
	a.keys.put([]byte("sealed"), "session-key")
	if a.decodedMetrics.get(json.RawMessage(`{"accumulated_cost":0.5}`)) == nil {
		t.Fatal("the metrics did not decode")
	}
	a.ReleaseMemory()
	if _, ok := a.keys.get([]byte("sealed")); ok {
		t.Error("the session key is still cached")
	}
	if n := len(a.decodedMetrics.m); n != 0 {
		t.Errorf("%d decoded metrics are still cached", n)
	}
	// The caches fill again.
	a.keys.put([]byte("sealed"), "session-key")
	if k, ok := a.keys.get([]byte("sealed")); !ok || k != "session-key" {
		t.Errorf("the key cache answers %q, %v after the release", k, ok)
	}
}
