package metrics

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/internal/llm"
)

// LLM wraps a model client of the named model so that each of its calls is counted: calls,
// time, tokens, cost and errors. Wrapped below a retry policy, it counts each attempt.
func (m *Metrics) LLM(c llm.Client, model string) llm.Client {
	return &observedLLM{next: c, m: m, model: model}
}

type observedLLM struct {
	next  llm.Client
	m     *Metrics
	model string
}

func (o *observedLLM) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := cmp.Or(req.Model, o.model)
	start := time.Now()
	resp, err := o.next.Complete(ctx, req)
	m := o.m
	m.llmCalls.WithLabelValues(model).Inc()
	m.llmDuration.WithLabelValues(model).Observe(time.Since(start).Seconds())
	if err != nil {
		m.llmErrors.WithLabelValues(model, errorKind(ctx, err)).Inc()
		return resp, err
	}
	u := resp.Usage
	for _, t := range []struct {
		kind string
		n    int64
	}{{"prompt", u.PromptTokens}, {"completion", u.CompletionTokens}, {"cache_read", u.CacheReadTokens},
		{"cache_write", u.CacheWriteTokens}, {"reasoning", u.ReasoningTokens}} {
		if t.n > 0 {
			m.llmTokens.WithLabelValues(model, t.kind).Add(float64(t.n))
		}
	}
	// Priced as the conversation's own metrics price it: by the model that answered.
	if cost := llm.Cost(cmp.Or(resp.Model, model), u); cost > 0 {
		m.llmCost.WithLabelValues(model).Add(cost)
	}
	return resp, nil
}

// errorKind names a failed call's error for the errors' label.
func errorKind(ctx context.Context, err error) string {
	var le *llm.Error
	switch {
	case errors.As(err, &le):
		return string(le.Kind)
	case ctx.Err() != nil:
		return "canceled"
	}
	return string(llm.KindOther)
}
