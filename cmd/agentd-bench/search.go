package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Paths of the search load and of its primitive.
const (
	searchPath = "/api/v1/app-conversations/search"
	alivePath  = "/alive"
)

// benchSearch stores o.conversations conversations (in one running sandbox) and then loads
// the conversation search (default limit 100) and, as its primitive, the static /alive
// handler of the same server, with the same clients for the same time.
func benchSearch(ctx context.Context, s *server, o options, progress func(string, ...any)) ([]row, []string, error) {
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	progress("creating %d conversations", o.conversations)
	created, ready, err := s.seedConversations(ctx, sb.ID, o.conversations, o.clients)
	if err != nil {
		return nil, nil, err
	}

	// Check that the search answers what the figure claims: a full first page.
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	var raw json.RawMessage
	if err := s.call(ctx, "GET", searchPath, nil, &raw); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", searchPath, err)
	}
	if want := min(o.conversations, 100); len(page.Items) != want {
		return nil, nil, fmt.Errorf("GET %s: %d items, want %d", searchPath, len(page.Items), want)
	}
	var aliveRaw json.RawMessage
	if err := s.call(ctx, "GET", alivePath, nil, &aliveRaw); err != nil {
		return nil, nil, err
	}

	progress("loading %s and %s, %d clients, %v each", alivePath, searchPath, o.clients, o.duration)
	warm := min(o.duration/5, time.Second)
	for _, path := range []string{alivePath, searchPath} {
		if _, err := s.load(ctx, path, o.clients, warm); err != nil {
			return nil, nil, err
		}
	}
	alive, err := s.load(ctx, alivePath, o.clients, o.duration)
	if err != nil {
		return nil, nil, err
	}
	search, err := s.load(ctx, searchPath, o.clients, o.duration)
	if err != nil {
		return nil, nil, err
	}

	const what = "GET " + searchPath + " (%d of %d conversations)"
	base := fmt.Sprintf("GET %s, same server and load", alivePath)
	rows := []row{
		{figure: fmt.Sprintf(what+", %d clients, throughput", len(page.Items), o.conversations, o.clients), agentd: search.rate(), primitive: alive.rate(), unit: unitRate, baseline: base},
		timeRow(fmt.Sprintf(what+", %d clients, p99 latency", len(page.Items), o.conversations, o.clients), 99, search.latencies, alive.latencies, base),
	}
	notes := []string{
		fmt.Sprintf("seeding: %d conversations created through POST /api/v1/app-conversations in %.2f s (%.0f/s, %d clients); all start tasks READY after %.2f s.",
			o.conversations, created.Seconds(), float64(o.conversations)/created.Seconds(), o.clients, ready.Seconds()),
		fmt.Sprintf("answer sizes: search %d bytes, /alive %d bytes; p50 latency: search %s, /alive %s; requests: search %d, /alive %d.",
			len(raw), len(aliveRaw), unitTime.format(seconds(percentile(search.latencies, 50))),
			unitTime.format(seconds(percentile(alive.latencies, 50))), search.requests, alive.requests),
		"the HTTP clients run in this process, on the same CPUs as the server, for both loads alike.",
	}
	return rows, notes, nil
}
