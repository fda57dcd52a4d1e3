package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
)

// scrape is one reading of /metrics: each sample by its name and labels, as
// `name{a="x",b="y"}` with the labels sorted; a histogram gives its _count and _sum.
type scrape map[string]float64

// parseMetrics reads the text format with Prometheus' own parser.
func parseMetrics(t *testing.T, text []byte) scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, text)
	}
	out := scrape{}
	for name, f := range families {
		if !strings.HasPrefix(name, "agentd_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("metric %s is not named agentd_…", name)
		}
		for _, m := range f.GetMetric() {
			labels := sampleLabels(m)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+labels] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func sampleLabels(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	if len(ls) == 0 {
		return ""
	}
	sort.Strings(ls)
	return "{" + strings.Join(ls, ",") + "}"
}

// metrics scrapes the API's /metrics with the admin's key.
func (e *env) metrics() scrape {
	e.t.Helper()
	return parseMetrics(e.t, e.must("GET", "/metrics", adminKey, nil, http.StatusOK, nil))
}

// TestMetricsOfAConversation scrapes /metrics before and after a scripted conversation
// (a failed model call retried, think, terminal, finish) and finds each counter moved by
// what the conversation did.
func TestMetricsOfAConversation(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	usage := llm.Usage{PromptTokens: 1000, CompletionTokens: 50}
	e.scripted(alice,
		llmtest.Fail(http.StatusServiceUnavailable, "overloaded"),
		llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("think", `{"thought":"first the greeting"}`)}, Usage: usage}},
		terminal(t, "echo hello"),
		llmtest.Step{Reply: &llmtest.Reply{ToolCalls: []llm.ToolCall{llmtest.Call("finish", `{"message":"done"}`)}, Usage: usage}},
	)
	before := e.metrics()
	c := e.startAgent(alice, map[string]any{"initial_message": message("Greet the world.", true)})
	c.waitStatus("finished")
	after := e.metrics()

	delta := func(name string) float64 { return after[name] - before[name] }
	cost := 3 * llm.Cost("gpt-4o", usage)
	for _, want := range []struct {
		name string
		n    float64
	}{
		{`agentd_agent_steps_total`, 3},
		{`agentd_llm_calls_total{model="gpt-4o"}`, 4},
		{`agentd_llm_call_duration_seconds_count{model="gpt-4o"}`, 4},
		{`agentd_llm_errors_total{kind="server",model="gpt-4o"}`, 1},
		{`agentd_llm_tokens_total{model="gpt-4o",type="prompt"}`, 3000},
		{`agentd_llm_tokens_total{model="gpt-4o",type="completion"}`, 150},
		{`agentd_llm_cost_usd_total{model="gpt-4o"}`, cost},
		{`agentd_tool_call_duration_seconds_count{tool="think"}`, 1},
		{`agentd_tool_call_duration_seconds_count{tool="terminal"}`, 1},
		{`agentd_tool_call_duration_seconds_count{tool="finish"}`, 1},
		{`agentd_tool_call_failures_total{tool="terminal"}`, 0},
		{`agentd_sandbox_operation_duration_seconds_count{backend="process",operation="start"}`, 1},
		{`agentd_sandbox_operation_failures_total{backend="process",operation="start"}`, 0},
		{`agentd_http_requests_total{method="POST",route="/api/v1/app-conversations",status="200"}`, 1},
		{`agentd_http_request_duration_seconds_count{method="POST",route="/api/v1/app-conversations"}`, 1},
		{`agentd_http_requests_total{method="GET",route="/metrics",status="200"}`, 1}, // the first scrape
	} {
		if got := delta(want.name); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want.n) {
			t.Errorf("%s moved by %v, want %v", want.name, got, want.n)
		}
	}
	if cost <= 0 {
		t.Fatal("gpt-4o has no price: the cost is not tested")
	}
	for name, want := range map[string]float64{
		`agentd_sandboxes{backend="process",state="RUNNING"}`: 1,
		`agentd_conversations{execution_status="finished"}`:   1,
	} {
		if after[name] != want {
			t.Errorf("%s is %v, want %v", name, after[name], want)
		}
	}
	for _, name := range []string{
		`agentd_store_query_duration_seconds_count{pool="write",statement="commit"}`,
		`agentd_store_query_duration_seconds_count{pool="read",statement="select"}`,
	} {
		if delta(name) <= 0 {
			t.Errorf("%s did not move", name)
		}
	}
	if after[`go_goroutines`] <= 0 || after[`process_resident_memory_bytes`] <= 0 {
		t.Error("Go's and the process's collectors are missing")
	}
}

// TestMetricsOfStreams: an event socket is a subscriber while it is open, and a
// disconnect once its client closes it.
func TestMetricsOfStreams(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")
	e.scripted(alice, llmtest.Text("Hello."))
	c := e.startAgent(alice, map[string]any{"initial_message": message("Hi.", true)})
	c.waitStatus("finished")
	before := e.metrics()
	s := dialSocket(t, c.socketURL(""), keyHeader(alice))
	e.eventually("one subscriber", func() bool { return e.metrics()[`agentd_stream_subscribers`] == before[`agentd_stream_subscribers`]+1 })
	s.c.CloseNow()
	e.eventually("the socket's disconnect", func() bool {
		m := e.metrics()
		return m[`agentd_stream_subscribers`] == before[`agentd_stream_subscribers`] &&
			m[`agentd_stream_disconnects_total{reason="closed"}`] == before[`agentd_stream_disconnects_total{reason="closed"}`]+1
	})
}

// TestMetricsAndProfilesAccess: /metrics and the profiles are for admins on the API, and
// for anyone who reaches the admin listener.
func TestMetricsAndProfilesAccess(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.AdminAddr = "127.0.0.1:0" })
	_, alice := e.newUser("alice")
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
		e.must("GET", path, "", nil, http.StatusUnauthorized, nil)
		body := e.must("GET", path, alice, nil, http.StatusForbidden, nil)
		if !strings.Contains(string(body), `"detail"`) {
			t.Errorf("GET %s as a user: %s, want a detail", path, body)
		}
		e.must("GET", path, adminKey, nil, http.StatusOK, nil)
	}

	admin := httptest.NewServer(e.app.AdminHandler())
	defer admin.Close()
	get := func(path string) (int, []byte, http.Header) {
		resp, err := http.Get(admin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes(), resp.Header
	}
	status, body, _ := get("/metrics")
	if status != http.StatusOK {
		t.Fatalf("admin listener /metrics: %d %s", status, body)
	}
	m := parseMetrics(t, body)
	if _, ok := m[`agentd_http_requests_total{method="POST",route="/api/keys",status="201"}`]; !ok {
		t.Errorf("the admin listener's metrics lack the API's requests")
	}
	for path, want := range map[string]int{
		"/debug/pprof/goroutine?debug=1": http.StatusOK, "/ready": http.StatusOK, "/alive": http.StatusOK,
		"/api/v1/app-conversations/search": http.StatusNotFound,
	} {
		if status, body, h := get(path); status != want || h.Get("X-Request-ID") == "" {
			t.Errorf("admin listener %s: %d (request id %q) %.200s, want %d", path, status, h.Get("X-Request-ID"), body, want)
		}
	}
	// The admin listener's own requests are not counted with the API's.
	_, body, _ = get("/metrics")
	if m := parseMetrics(t, body); m[`agentd_http_requests_total{method="GET",route="/metrics",status="200"}`] != 1 {
		t.Errorf("GET /metrics counted %v times, want once (the API's)", m[`agentd_http_requests_total{method="GET",route="/metrics",status="200"}`])
	}
}
