package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/llm/openai"
	"github.com/agentd/agentd/internal/metrics"
)

// TestLLM: a wrapped client counts every call with its model, its tokens and cost, and its
// failures by kind, over the real wire protocol of a scripted model.
func TestLLM(t *testing.T) {
	usage := llm.Usage{PromptTokens: 1200, CompletionTokens: 30, CacheReadTokens: 200}
	srv := llmtest.NewOpenAI(t,
		llmtest.Step{Reply: &llmtest.Reply{Text: "hi", Usage: usage}},
		llmtest.Fail(http.StatusUnauthorized, "bad key"),
		llmtest.Step{Reply: &llmtest.Reply{Text: "hi again", Usage: usage}},
	)
	client, err := openai.New(llm.Config{Model: "gpt-4o", BaseURL: srv.URL(), APIKey: llmtest.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	c := m.LLM(client, "gpt-4o")
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("hello")}}}}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var le *llm.Error
	if _, err := c.Complete(t.Context(), req); !errors.As(err, &le) || le.Kind != llm.KindAuth {
		t.Fatalf("second call: %v, want an auth error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Complete(ctx, req); err == nil {
		t.Fatal("a call with a cancelled context succeeded")
	}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}

	got := gather(t, m)
	want := map[string]float64{
		`agentd_llm_calls_total{model="gpt-4o"}`:                    4,
		`agentd_llm_errors_total{kind="auth",model="gpt-4o"}`:       1,
		`agentd_llm_errors_total{kind="canceled",model="gpt-4o"}`:   1,
		`agentd_llm_tokens_total{model="gpt-4o",type="prompt"}`:     2400,
		`agentd_llm_tokens_total{model="gpt-4o",type="completion"}`: 60,
		`agentd_llm_tokens_total{model="gpt-4o",type="cache_read"}`: 400,
		`agentd_llm_call_duration_seconds_count{model="gpt-4o"}`:    4,
		`agentd_llm_cost_usd_total{model="gpt-4o"}`:                 2 * llm.Cost("gpt-4o", usage),
	}
	if want[`agentd_llm_cost_usd_total{model="gpt-4o"}`] <= 0 {
		t.Fatal("gpt-4o has no price: the cost is not tested")
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || fmt.Sprintf("%.9f", g) != fmt.Sprintf("%.9f", v) {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// gather reads every sample of m's registry, by name and sorted labels; a histogram gives
// its _count.
func gather(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			var ls []string
			for _, l := range s.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			labels := ""
			if len(ls) > 0 {
				labels = "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case s.Counter != nil:
				out[f.GetName()+labels] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				out[f.GetName()+labels] = s.GetGauge().GetValue()
			case s.Histogram != nil:
				out[f.GetName()+"_count"+labels] = float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
