package llm

import "sync"

// MetricsSnapshot is a conversation's token usage and cost in OpenHands' MetricsSnapshot JSON
// shape, the "metrics" of a conversation; the API serves it as it is (apitypes aliases it).
type MetricsSnapshot struct {
	ModelName             string      `json:"model_name"`
	AccumulatedCost       float64     `json:"accumulated_cost"`
	MaxBudgetPerTask      *float64    `json:"max_budget_per_task"`
	AccumulatedTokenUsage *TokenUsage `json:"accumulated_token_usage"`
}

// TokenUsage is OpenHands' TokenUsage: accumulated counts, plus the context window of the
// model, the tokens of the latest call (per_turn_token) and the latest response's id.
type TokenUsage struct {
	Model            string `json:"model"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	CacheReadTokens  int64  `json:"cache_read_tokens"`
	CacheWriteTokens int64  `json:"cache_write_tokens"`
	ReasoningTokens  int64  `json:"reasoning_tokens"`
	ContextWindow    int64  `json:"context_window"`
	PerTurnToken     int64  `json:"per_turn_token"`
	ResponseID       string `json:"response_id"`
}

// Metrics accumulates the usage and cost of one conversation's model calls. The zero value
// is ready to use; its methods are safe for concurrent use.
type Metrics struct {
	mu         sync.Mutex
	model      string
	cost       float64
	maxBudget  *float64
	usage      Usage
	perTurn    int64
	responseID string
}

// NewMetricsFrom returns a Metrics that continues from a stored snapshot, so that a
// conversation picked up after a restart keeps counting where it stopped.
func NewMetricsFrom(s MetricsSnapshot) *Metrics {
	m := &Metrics{model: s.ModelName, cost: s.AccumulatedCost}
	if s.MaxBudgetPerTask != nil {
		b := *s.MaxBudgetPerTask
		m.maxBudget = &b
	}
	if t := s.AccumulatedTokenUsage; t != nil {
		m.usage = Usage{
			PromptTokens:     t.PromptTokens,
			CompletionTokens: t.CompletionTokens,
			CacheReadTokens:  t.CacheReadTokens,
			CacheWriteTokens: t.CacheWriteTokens,
			ReasoningTokens:  t.ReasoningTokens,
		}
		m.perTurn, m.responseID = t.PerTurnToken, t.ResponseID
		if m.model == "" {
			m.model = t.Model
		}
	}
	return m
}

// SetMaxBudget records the conversation's budget in USD (max_budget_per_task). Metrics only
// reports it; the agent loop enforces it.
func (m *Metrics) SetMaxBudget(usd float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxBudget = &usd
}

// Add counts one call: its usage, its cost by Cost(model, u), and its response id.
func (m *Metrics) Add(model string, u Usage, responseID string) {
	cost := Cost(model, u)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.model = model
	m.cost += cost
	m.usage = m.usage.Add(u)
	m.perTurn = u.PromptTokens + u.CompletionTokens
	m.responseID = responseID
}

// Snapshot returns the totals so far.
func (m *Metrics) Snapshot() MetricsSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := MetricsSnapshot{
		ModelName:       m.model,
		AccumulatedCost: m.cost,
		AccumulatedTokenUsage: &TokenUsage{
			Model:            m.model,
			PromptTokens:     m.usage.PromptTokens,
			CompletionTokens: m.usage.CompletionTokens,
			CacheReadTokens:  m.usage.CacheReadTokens,
			CacheWriteTokens: m.usage.CacheWriteTokens,
			ReasoningTokens:  m.usage.ReasoningTokens,
			PerTurnToken:     m.perTurn,
			ResponseID:       m.responseID,
		},
	}
	if m.model != "" {
		s.AccumulatedTokenUsage.ContextWindow = int64(ContextWindow(m.model))
	}
	if m.maxBudget != nil {
		b := *m.maxBudget
		s.MaxBudgetPerTask = &b
	}
	return s
}
