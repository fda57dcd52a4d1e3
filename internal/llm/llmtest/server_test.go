package llmtest

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestNewOpenAIOn: a server on the test's listener answers there and records where each
// request came from.
func TestNewOpenAIOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewOpenAIOn(t, ln, Text("hello"))
	if want := "http://" + ln.Addr().String() + "/v1"; s.URL() != want {
		t.Errorf("URL %s, want %s", s.URL(), want)
	}
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "hello") {
		t.Fatalf("%s: %s", resp.Status, body)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if host, _, err := net.SplitHostPort(reqs[0].RemoteAddr); err != nil || host != "127.0.0.1" {
		t.Errorf("remote address %q", reqs[0].RemoteAddr)
	}
}
