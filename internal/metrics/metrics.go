// Package metrics is agentd's Prometheus instrumentation: one registry per server (never
// the global one), the collectors of every domain, and the adapters that the composition
// root hands to the services, which know only their own small observer interfaces
// (httpapi.Metrics, sandbox.Metrics, agent.Observer, sqlite.QueryObserver). Every name starts
// with agentd_.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/store"
)

// Buckets of the histograms, in seconds.
var (
	// requestBuckets spans a cached answer (100 µs) to a slow clone relayed (10 s).
	requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// queryBuckets spans an indexed read (20 µs) to a write that waited for the writer (1 s).
	queryBuckets = []float64{.00002, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}
	// slowBuckets spans sandbox operations, tool calls and model calls: 1 ms to 5 minutes.
	slowBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
)

// Metrics holds a server's collectors. Its methods are safe for concurrent use; a nil
// *Metrics is not valid, make one with New.
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger
	// own registers every collector, with the replica's labels (Of).
	own prometheus.Registerer
	// node is the replica's node, whose sandboxes WatchStore counts ("": all).
	node string

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	sandboxOps      *prometheus.HistogramVec
	sandboxFailures *prometheus.CounterVec
	sandboxPools    *prometheus.GaugeVec

	agentSteps   prometheus.Counter
	toolDuration *prometheus.HistogramVec
	toolFailures *prometheus.CounterVec

	llmCalls    *prometheus.CounterVec
	llmDuration *prometheus.HistogramVec
	llmTokens   *prometheus.CounterVec
	llmCost     *prometheus.CounterVec
	llmErrors   *prometheus.CounterVec

	queryDuration *prometheus.HistogramVec
	queryFailures *prometheus.CounterVec
}

// New returns a registry with Go's and the process's collectors and agentd's own, which
// count from zero. log receives the errors of scrape-time reads; nil discards them.
func New(log *slog.Logger) *Metrics {
	return Of(log, Replica{})
}

// Replica names the replica whose figures a registry holds.
type Replica struct {
	ID, Node string
}

// Of is New for one of several replicas of a store: every series carries the labels replica
// and node, so that the figures of each replica (its requests, streams, agent steps, the
// sandboxes of its node) add up across replicas; the tallies of the store that every
// replica reads alike (agentd_conversations) say so with scope="database". A zero Replica
// adds no label.
func Of(log *slog.Logger, r Replica) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: log, node: r.Node}
	m.own = m.reg
	if r.ID != "" {
		m.own = prometheus.WrapRegistererWith(prometheus.Labels{"replica": r.ID, "node": r.Node}, m.reg)
	}
	m.own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.httpRequests = counterVec(m, "agentd_http_requests_total", "HTTP requests answered, by route pattern, method and status.", "route", "method", "status")
	m.httpDuration = histogramVec(m, "agentd_http_request_duration_seconds", "Time to answer an HTTP request, by route pattern and method.", requestBuckets, "route", "method")

	m.sandboxOps = histogramVec(m, "agentd_sandbox_operation_duration_seconds", "Time of sandbox operations, failed ones included, by backend and operation: start (a cold start, until the runtime answers), claim (a start served from a warm pool, until the runtime answers with the delivered key), pool_start (a sandbox started for a warm pool), pause, resume.", slowBuckets, "backend", "operation")
	m.sandboxFailures = counterVec(m, "agentd_sandbox_operation_failures_total", "Sandbox operations that failed, by backend and operation.", "backend", "operation")
	m.sandboxPools = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agentd_sandbox_pool_ready", Help: "Sandboxes waiting in this replica's warm pools, by backend and spec; they belong to no user and count against no limit."}, []string{"backend", "spec"})
	m.own.MustRegister(m.sandboxPools)

	m.agentSteps = prometheus.NewCounter(prometheus.CounterOpts{Name: "agentd_agent_steps_total", Help: "Agent steps taken: model calls of the agent loops and what they did with the answers."})
	m.own.MustRegister(m.agentSteps)
	m.toolDuration = histogramVec(m, "agentd_tool_call_duration_seconds", "Time of the agents' tool calls, by tool.", slowBuckets, "tool")
	m.toolFailures = counterVec(m, "agentd_tool_call_failures_total", "Tool calls that could not be made or answered an error, by tool.", "tool")

	m.llmCalls = counterVec(m, "agentd_llm_calls_total", "Model calls (each attempt of a retried call), by model.", "model")
	m.llmDuration = histogramVec(m, "agentd_llm_call_duration_seconds", "Time of model calls, failed ones included, by model.", slowBuckets, "model")
	m.llmTokens = counterVec(m, "agentd_llm_tokens_total", "Tokens the models reported, by model and type (prompt, completion, cache_read, cache_write, reasoning); cache and reasoning tokens are also counted in prompt and completion.", "model", "type")
	m.llmCost = counterVec(m, "agentd_llm_cost_usd_total", "Cost of the model calls in US dollars at the prices agentd knows (a model it does not know costs nothing), by model.", "model")
	m.llmErrors = counterVec(m, "agentd_llm_errors_total", "Model calls that failed, by model and kind (auth, rate_limit, server, timeout, connection, bad_request, context_window, internal_address, other, canceled).", "model", "kind")

	m.queryDuration = histogramVec(m, "agentd_store_query_duration_seconds", "Time of the store's statements, reading their rows included, by pool (read, write) and statement (select, insert, begin, commit, …).", queryBuckets, "pool", "statement")
	m.queryFailures = counterVec(m, "agentd_store_query_failures_total", "Store statements that failed, by pool and statement.", "pool", "statement")
	return m
}

func counterVec(m *Metrics, name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.own.MustRegister(v)
	return v
}

func histogramVec(m *Metrics, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.own.MustRegister(v)
	return v
}

// Handler serves the metrics in Prometheus' text format (or the format a scraper asks for).
// A scrape-time read that fails leaves its metrics out and is logged; the rest is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Registry is the registry, for tests and for callers that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest implements httpapi.Metrics.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// ObserveOperation implements sandbox.Metrics.
func (m *Metrics) ObserveOperation(backend, op string, d time.Duration, failed bool) {
	m.sandboxOps.WithLabelValues(backend, op).Observe(d.Seconds())
	if failed {
		m.sandboxFailures.WithLabelValues(backend, op).Inc()
	}
}

// PoolSize implements sandbox.Metrics.
func (m *Metrics) PoolSize(backend, spec string, ready int) {
	m.sandboxPools.WithLabelValues(backend, spec).Set(float64(ready))
}

// Step implements agent.Observer.
func (m *Metrics) Step() { m.agentSteps.Inc() }

// ToolCall implements agent.Observer.
func (m *Metrics) ToolCall(tool string, d time.Duration, failed bool) {
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
	if failed {
		m.toolFailures.WithLabelValues(tool).Inc()
	}
}

// ObserveQuery implements sqlite.QueryObserver.
func (m *Metrics) ObserveQuery(pool, statement string, d time.Duration, failed bool) {
	m.queryDuration.WithLabelValues(pool, statement).Observe(d.Seconds())
	if failed {
		m.queryFailures.WithLabelValues(pool, statement).Inc()
	}
}

// countTimeout bounds the store's tallies at a scrape.
const countTimeout = 5 * time.Second

// WatchStore adds the store's tallies, read at every scrape: sandboxes by backend and
// state (every backend a sandbox was ever recorded with) and conversations by their agent's
// execution status ("none" for a conversation whose agent never ran).
//
// A replica of several counts the sandboxes of its own node (and those recorded before nodes,
// and, of a remote backend, all), so that the sandboxes of node-local backends add up across
// replicas; the conversations are the whole database's.
func (m *Metrics) WatchStore(counts func(ctx context.Context) (store.Counts, error)) {
	m.own.MustRegister(&storeCollector{counts: counts, log: m.log, node: m.node, replicas: m.node != ""})
}

var (
	sandboxesDesc     = prometheus.NewDesc("agentd_sandboxes", "Sandboxes recorded, by backend and state: of the replica's node, when it is one of several.", []string{"backend", "state"}, nil)
	conversationsDesc = prometheus.NewDesc("agentd_conversations", "Conversations, by their agent's execution status (none: it never ran): the whole store's, the same on every replica.", []string{"execution_status"}, nil)
)

type storeCollector struct {
	counts   func(ctx context.Context) (store.Counts, error)
	log      *slog.Logger
	node     string
	replicas bool
}

// conversationsScopedDesc is conversationsDesc of a replica of several: scope="database" says
// that every replica reports the same figure (aggregate with max, not sum).
var conversationsScopedDesc = prometheus.NewDesc("agentd_conversations", "Conversations, by their agent's execution status (none: it never ran): the whole store's, the same on every replica.", []string{"execution_status", "scope"}, nil)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sandboxesDesc
	if c.replicas {
		ch <- conversationsScopedDesc
		return
	}
	ch <- conversationsDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), countTimeout)
	defer cancel()
	n, err := c.counts(ctx)
	if err != nil {
		c.log.Error("metrics: count the store's rows", "err", err)
		ch <- prometheus.NewInvalidMetric(sandboxesDesc, err)
		return
	}
	type key struct{ backend, state string }
	sandboxes := map[key]int{}
	for k, v := range n.Sandboxes {
		if c.replicas && k.Node != "" && k.Node != c.node {
			continue // another replica's node counts them
		}
		sandboxes[key{k.Backend, string(k.Status)}] += v
	}
	for k, v := range sandboxes {
		ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(v), k.backend, k.state)
	}
	for st, v := range n.Conversations {
		if st == "" {
			st = "none"
		}
		if c.replicas {
			ch <- prometheus.MustNewConstMetric(conversationsScopedDesc, prometheus.GaugeValue, float64(v), st, "database")
			continue
		}
		ch <- prometheus.MustNewConstMetric(conversationsDesc, prometheus.GaugeValue, float64(v), st)
	}
}

// WatchStreams adds the live event streams' subscribers and their disconnects, read from
// the bus at every scrape.
func (m *Metrics) WatchStreams(bus event.Bus) {
	m.own.MustRegister(streamCollector{bus})
}

var (
	subscribersDesc = prometheus.NewDesc("agentd_stream_subscribers", "Open subscriptions to conversations' live events (WebSockets, SSE streams, waiting clients).", nil, nil)
	disconnectsDesc = prometheus.NewDesc("agentd_stream_disconnects_total", "Subscriptions to live events that ended, by reason: closed (by their reader), lagged (dropped for falling behind), ended (with their conversation).", []string{"reason"}, nil)
)

type streamCollector struct{ bus event.Bus }

func (c streamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- subscribersDesc
	ch <- disconnectsDesc
}

func (c streamCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.bus.Stats()
	ch <- prometheus.MustNewConstMetric(subscribersDesc, prometheus.GaugeValue, float64(st.Subscribers))
	for reason, n := range map[string]uint64{"closed": st.Closed, "lagged": st.Lagged, "ended": st.Ended} {
		ch <- prometheus.MustNewConstMetric(disconnectsDesc, prometheus.CounterValue, float64(n), reason)
	}
}
