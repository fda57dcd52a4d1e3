package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
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

// TestMetricsCacheBounded: the decoded metrics kept hold at most maxDecodedMetricsBytes,
// however long the response ids a user's model server gives.
func TestMetricsCacheBounded(t *testing.T) {
	var c metricsCache
	id := strings.Repeat("r", 256<<10)
	for i := range 100 {
		raw := json.RawMessage(fmt.Sprintf(`{"accumulated_cost":%d,"accumulated_token_usage":{"response_id":%q}}`, i, id))
		if c.get(raw) == nil {
			t.Fatalf("metrics %d did not decode", i)
		}
		if c.bytes > maxDecodedMetricsBytes {
			t.Fatalf("after %d metrics of 256 KiB the cache holds %d bytes, over %d", i+1, c.bytes, maxDecodedMetricsBytes)
		}
	}
}
