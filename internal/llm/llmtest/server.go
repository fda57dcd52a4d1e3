package llmtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/llm"
)

// APIKey is the key Server.Config hands out.
const APIKey = "sk-llmtest-5f8e2c"

// protocol is one provider's wire format.
type protocol interface {
	name() string
	paths() []string
	// baseURL is what a client puts in Config.BaseURL for a server at root.
	baseURL(root string) string
	apiKey(r *http.Request) string
	decode(body []byte) (RecordedRequest, error)
	// reply writes the n-th (1-based) reply.
	reply(w http.ResponseWriter, req RecordedRequest, r Reply, n int)
	fail(w http.ResponseWriter, e ErrorReply)
}

// Server is a scripted model server on 127.0.0.1, or on a listener of the test's. Its methods are
// safe for concurrent use.
type Server struct {
	t     testing.TB
	proto protocol
	srv   *httptest.Server

	mu         sync.Mutex
	script     []Step
	requests   []RecordedRequest
	requireKey string
	// beside answers requests that offer no tools, once Beside was called.
	beside    []Step
	besideSet bool
}

// NewOpenAI starts a server speaking OpenAI chat completions (POST /v1/chat/completions and
// /chat/completions). It is closed when the test ends.
func NewOpenAI(t testing.TB, script ...Step) *Server {
	return newServer(t, openaiProtocol{}, script)
}

// NewOpenAIOn is NewOpenAI serving on ln, a listener its clients reach (one in a test
// cluster's network namespace, say), instead of on 127.0.0.1. It closes ln when the test
// ends.
func NewOpenAIOn(t testing.TB, ln net.Listener, script ...Step) *Server {
	t.Helper()
	s := &Server{t: t, proto: openaiProtocol{}, script: slices.Clone(script)}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// NewAnthropic starts a server speaking Anthropic messages (POST /v1/messages). It is
// closed when the test ends.
func NewAnthropic(t testing.TB, script ...Step) *Server {
	return newServer(t, anthropicProtocol{}, script)
}

// NewServer starts a server for provider, llm.ProviderOpenAI or llm.ProviderAnthropic.
func NewServer(t testing.TB, provider string, script ...Step) *Server {
	switch provider {
	case llm.ProviderOpenAI:
		return NewOpenAI(t, script...)
	case llm.ProviderAnthropic:
		return NewAnthropic(t, script...)
	}
	t.Fatalf("llmtest: unknown provider %q", provider)
	return nil
}

func newServer(t testing.TB, p protocol, script []Step) *Server {
	t.Helper()
	s := &Server{t: t, proto: p, script: slices.Clone(script)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to give a client (Config.BaseURL).
func (s *Server) URL() string { return s.proto.baseURL(s.srv.URL) }

// Config returns a client configuration for this server: its provider and URL, the model,
// and APIKey.
func (s *Server) Config(model string) llm.Config {
	return llm.Config{Provider: s.proto.name(), Model: model, BaseURL: s.URL(), APIKey: APIKey}
}

// Push appends steps to the script.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// Beside scripts the answers to requests that offer no tools (a conversation's title, a
// summary), which may arrive in any order beside the agent's: from then on each such request
// takes the next of these steps, and the main script answers only requests with tools.
func (s *Server) Beside(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beside = append(s.beside, steps...)
	s.besideSet = true
}

// RequireAPIKey makes the server answer 401, in the provider's shape and without using a
// step, to requests that do not carry key. Like real providers, the message quotes the key
// it received, so tests can check that it never reaches an error shown to users.
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requireKey = key
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Remaining returns the number of unused steps.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !slices.Contains(s.proto.paths(), r.URL.Path) {
		s.t.Errorf("llmtest: unexpected request %s %s", r.Method, r.URL.Path)
		s.proto.fail(w, ErrorReply{Status: http.StatusNotFound, Message: "llmtest: no such endpoint " + r.URL.Path})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.proto.fail(w, ErrorReply{Status: http.StatusBadRequest, Message: "llmtest: reading body: " + err.Error()})
		return
	}
	rec, err := s.proto.decode(body)
	if err != nil {
		s.t.Errorf("llmtest: undecodable %s request: %v", s.proto.name(), err)
		s.proto.fail(w, ErrorReply{Status: http.StatusBadRequest, Message: "llmtest: " + err.Error()})
		return
	}
	rec.Method, rec.Path, rec.Header, rec.Body, rec.ContentLength = r.Method, r.URL.Path, r.Header.Clone(), body, r.ContentLength
	rec.APIKey = s.proto.apiKey(r)
	rec.RemoteAddr = r.RemoteAddr

	step, n, refusal := s.next(rec)
	switch refusal {
	case refusedKey:
		s.proto.fail(w, ErrorReply{Status: http.StatusUnauthorized, Message: "Incorrect API key provided: " + rec.APIKey})
		return
	case refusedExhausted:
		msg := fmt.Sprintf("llmtest: script exhausted: request %d has no scripted reply", n)
		s.t.Errorf("%s", msg)
		s.proto.fail(w, ErrorReply{Status: http.StatusInternalServerError, Message: msg})
		return
	}
	for step.Func != nil {
		step = step.Func(rec)
	}
	switch {
	case step.HTTP != nil:
		step.HTTP(w, r)
	case step.Error != nil:
		if step.Error.RetryAfter != "" {
			w.Header().Set("Retry-After", step.Error.RetryAfter)
		}
		s.proto.fail(w, *step.Error)
	case step.Reply != nil:
		s.proto.reply(w, rec, *step.Reply, n)
	default:
		s.t.Errorf("llmtest: step %d is empty", n)
		s.proto.fail(w, ErrorReply{Status: http.StatusInternalServerError, Message: "llmtest: empty step"})
	}
}

// Why a request gets no step.
const (
	refusedKey       = "key"
	refusedExhausted = "exhausted"
)

// next records rec and takes the next step, unless the request is refused for its key or
// the script is exhausted. n is the request's number.
func (s *Server) next(rec RecordedRequest) (step Step, n int, refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	n = len(s.requests)
	switch {
	case s.requireKey != "" && rec.APIKey != s.requireKey:
		return Step{}, n, refusedKey
	case s.besideSet && len(rec.Tools) == 0:
		if len(s.beside) == 0 {
			return Step{}, n, refusedExhausted
		}
		step, s.beside = s.beside[0], s.beside[1:]
		return step, n, ""
	case len(s.script) == 0:
		return Step{}, n, refusedExhausted
	}
	step, s.script = s.script[0], s.script[1:]
	return step, n, ""
}
