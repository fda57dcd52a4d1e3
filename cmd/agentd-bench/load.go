package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// loadResult is what one load produced.
type loadResult struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration
}

func (r loadResult) rate() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// load sends GET path (with the admin's key) from clients concurrent clients for d, each
// client waiting for an answer before it sends the next request (a closed loop). Any answer
// but 200 ends the load with an error.
func (s *server) load(ctx context.Context, path string, clients int, d time.Duration) (loadResult, error) {
	return s.loadURL(ctx, s.url+path, clients, d)
}

// loadURL is load of any URL, with the same client and key.
func (s *server) loadURL(ctx context.Context, url string, clients int, d time.Duration) (loadResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
			if err != nil {
				cancel(err)
				return
			}
			req.Header.Set("X-Session-API-Key", s.key)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := s.get(req); err != nil {
					cancel(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return loadResult{}, fmt.Errorf("load GET %s: %w", url, err)
	}
	all := slices.Concat(lat...)
	return loadResult{requests: len(all), elapsed: elapsed, latencies: all}, nil
}

// get sends req and reads the whole answer, so the connection is reused.
func (s *server) get(req *http.Request) error {
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
