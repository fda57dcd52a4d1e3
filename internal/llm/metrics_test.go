package llm

import (
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"testing"
)

func TestMetrics(t *testing.T) {
	var m Metrics
	m.SetMaxBudget(5)
	m.Add("gpt-4o", Usage{PromptTokens: 1000, CompletionTokens: 100, CacheReadTokens: 200}, "r1")
	m.Add("gpt-4o", Usage{PromptTokens: 3000, CompletionTokens: 50, ReasoningTokens: 10, CacheWriteTokens: 5}, "r2")
	s := m.Snapshot()
	wantCost := Cost("gpt-4o", Usage{PromptTokens: 1000, CompletionTokens: 100, CacheReadTokens: 200}) +
		Cost("gpt-4o", Usage{PromptTokens: 3000, CompletionTokens: 50, ReasoningTokens: 10, CacheWriteTokens: 5})
	if s.ModelName != "gpt-4o" || math.Abs(s.AccumulatedCost-wantCost) > 1e-12 || s.MaxBudgetPerTask == nil || *s.MaxBudgetPerTask != 5 {
		t.Errorf("snapshot = %+v, want cost %v and budget 5", s, wantCost)
	}
	want := TokenUsage{
		Model: "gpt-4o", PromptTokens: 4000, CompletionTokens: 150, CacheReadTokens: 200,
		CacheWriteTokens: 5, ReasoningTokens: 10, ContextWindow: 128_000, PerTurnToken: 3050, ResponseID: "r2",
	}
	if *s.AccumulatedTokenUsage != want {
		t.Errorf("token usage = %+v, want %+v", *s.AccumulatedTokenUsage, want)
	}

	restored := NewMetricsFrom(s).Snapshot()
	if !reflect.DeepEqual(restored, s) {
		t.Errorf("restored snapshot = %+v, want %+v", restored, s)
	}
}

func TestMetricsEmptySnapshotJSON(t *testing.T) {
	got, err := json.Marshal(new(Metrics).Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"model_name":"","accumulated_cost":0,"max_budget_per_task":null,"accumulated_token_usage":{"model":"","prompt_tokens":0,"completion_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"context_window":0,"per_turn_token":0,"response_id":""}}`
	if string(got) != want {
		t.Errorf("JSON = %s\nwant   %s", got, want)
	}
}

func TestMetricsConcurrent(t *testing.T) {
	var m Metrics
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			m.Add("gpt-4o", Usage{PromptTokens: 10, CompletionTokens: 1}, "r")
			_ = m.Snapshot()
		})
	}
	wg.Wait()
	if got := m.Snapshot().AccumulatedTokenUsage.PromptTokens; got != 200 {
		t.Errorf("prompt tokens %d, want 200", got)
	}
}
