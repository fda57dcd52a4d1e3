package sse_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/sse"
)

// TestFraming: events, comments and the retry field as the SSE format has them, with line
// breaks in data kept as data lines and none let into an id or a name.
func TestFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := sse.Start(w, time.Minute)
		if err != nil {
			t.Error(err)
			return
		}
		for _, err := range []error{
			out.Retry(1500 * time.Millisecond),
			out.Event("7", "", []byte(`{"a":1}`)),
			out.Event("", "close", []byte("line one\nline two\r\n")),
			out.Event("x\ny", "na\rme", []byte("v")),
			out.Comment("keep-alive"),
		} {
			if err != nil {
				t.Error(err)
			}
		}
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	want := "retry: 1500\n\n" +
		"id: 7\ndata: {\"a\":1}\n\n" +
		"event: close\ndata: line one\ndata: line two\n\n" +
		"id: xy\nevent: name\ndata: v\n\n" +
		": keep-alive\n\n"
	if string(body) != want {
		t.Fatalf("stream\n%q\nwant\n%q", body, want)
	}
}

// TestCutWhen: a write blocked on a client that takes nothing ends soon after the context
// ends, not at the write timeout; a client that reads still gets what is written then.
func TestCutWhen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := sse.Start(w, time.Hour)
		if err != nil {
			ended <- err
			return
		}
		defer out.CutWhen(ctx)()
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if err := out.Event("", "", chunk); err != nil {
				ended <- err
				return
			}
		}
	}))
	defer srv.Close()
	// A client that sends its request and never reads: the server's writes fill the
	// connection's buffers and block.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil { // the status line: the stream started
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		t.Fatalf("the handler ended before the cut: %v", err)
	default:
	}
	cancel()
	// Bounded by the test's own timeout: without the cut the write would wait an hour.
	if err := <-ended; err == nil {
		t.Fatal("the blocked write ended without an error")
	}
}
