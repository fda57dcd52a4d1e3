package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store"
)

// scrapeText serves m's registry once and returns the text.
func scrapeText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}

// TestReplicaFigures: a replica's figures carry its name and node; it counts the sandboxes of
// its node (and those from before nodes) only, so that they add up across replicas, and says
// that the conversations are the whole database's. A lone server adds no label and counts
// every sandbox.
func TestReplicaFigures(t *testing.T) {
	counts := func(context.Context) (store.Counts, error) {
		return store.Counts{
			Sandboxes: map[store.SandboxKey]int{
				{Backend: "bwrap", Node: "n1", Status: sandbox.StatusRunning}: 2,
				{Backend: "bwrap", Node: "n2", Status: sandbox.StatusRunning}: 5,
				{Backend: "bwrap", Node: "", Status: sandbox.StatusRunning}:   1,
			},
			Conversations: map[string]int{"running": 3},
		}, nil
	}
	m := metrics.Of(nil, metrics.Replica{ID: "n1/abc", Node: "n1"})
	m.WatchStore(counts)
	m.WatchStreams(&event.LocalBus{})
	text := scrapeText(t, m)
	for _, want := range []string{
		`agentd_sandboxes{backend="bwrap",node="n1",replica="n1/abc",state="RUNNING"} 3`,
		`agentd_conversations{execution_status="running",node="n1",replica="n1/abc",scope="database"} 3`,
		`agentd_stream_subscribers{node="n1",replica="n1/abc"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the scrape lacks %s:\n%s", want, grep(text, "agentd_"))
		}
	}

	lone := metrics.New(nil)
	lone.WatchStore(counts)
	text = scrapeText(t, lone)
	if want := `agentd_sandboxes{backend="bwrap",state="RUNNING"} 8`; !strings.Contains(text, want) {
		t.Errorf("a lone server's scrape lacks %s:\n%s", want, grep(text, "agentd_"))
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
