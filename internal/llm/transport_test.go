package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"
)

// Conversations calling one provider at once keep their connections for their next calls:
// every connection of a round of calls at once goes back to the pool (Go's default transport
// keeps two and closes the rest), and the next round reuses them all.
func TestCallsAtOnceReuseTheirConnections(t *testing.T) {
	const atOnce = 8
	arrived := make(chan struct{}, atOnce)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	client := Config{}.Client()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pooled := make(chan error, 2*atOnce)
	reused := make(chan bool, 2*atOnce)
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:     func(info httptrace.GotConnInfo) { reused <- info.Reused },
		PutIdleConn: func(err error) { pooled <- err },
	})
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, atOnce)
		for range atOnce {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(trace, "GET", srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		// Every call is in the handler before any is answered, so each has a connection of
		// its own.
		for range atOnce {
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatal("the calls did not all arrive")
			}
		}
		for range atOnce {
			release <- struct{}{}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		for range atOnce {
			select {
			case err := <-pooled:
				if err != nil {
					t.Fatalf("round %d: a connection was not kept: %v", round, err)
				}
			case <-ctx.Done():
				t.Fatal("the connections did not go back to the pool")
			}
		}
		for range atOnce {
			if r := <-reused; r != (round > 0) {
				t.Fatalf("round %d: a call's connection reused: %v", round, r)
			}
		}
	}
}
