package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/agentd/agentd/internal/apiclient"
	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/sandbox/kubernetes/kubetest"
)

// replica is one of deploy/'s agentd pods, reached at its address on the pods' network
// through the cluster's dialer, as a client in the cluster reaches it.
type replica struct {
	pod  corev1.Pod
	base string
	key  string
	api  *apiclient.Client
	// streams has no timeout: an SSE stream lasts as long as the test follows it.
	streams *http.Client
}

func newReplica(t *testing.T, c *kubetest.Cluster, pod corev1.Pod, key string) *replica {
	t.Helper()
	transport := &http.Transport{DialContext: c.DialContext}
	t.Cleanup(transport.CloseIdleConnections)
	base := "http://" + net.JoinHostPort(pod.Status.PodIP, "3000")
	api, err := apiclient.New(base, key, apiclient.Options{HTTP: &http.Client{Transport: transport, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{pod: pod, base: base, key: key, api: api, streams: &http.Client{Transport: transport}}
}

// do calls the API, failing the test on an error.
func (r *replica) do(ctx context.Context, t *testing.T, method, path string, body, out any) {
	t.Helper()
	if err := r.api.Do(ctx, method, path, nil, body, out); err != nil {
		t.Fatalf("%s on %s: %v", r.pod.Name, path, err)
	}
}

// startConversation starts a conversation with a first message through the public API and
// waits for its start task (which starts its sandbox pod) to be READY; it returns the
// conversation's and the sandbox's ids.
func (r *replica) startConversation(ctx context.Context, t *testing.T, text string) (conv, sandbox string) {
	t.Helper()
	var task apitypes.AppConversationStartTask
	r.do(ctx, t, "POST", "/api/v1/app-conversations", map[string]any{
		"initial_message": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}},
	}, &task)
	waitFor(t, 5*time.Minute, "the start task to be READY", func() (bool, string) {
		got, err := r.api.StartTask(ctx, task.ID)
		if err != nil {
			return false, err.Error()
		}
		if got.Status == "ERROR" {
			t.Fatalf("the start task failed: %s", deref(got.Detail))
		}
		task = got
		return got.Status == "READY", string(got.Status)
	})
	return deref(task.AppConversationID), deref(task.SandboxID)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// logEvent is what the test reads of an event of a conversation's log.
type logEvent struct {
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	Source   string `json:"source"`
	ToolName string `json:"tool_name"`
	Key      string `json:"key"`
	Value    any    `json:"value"`
	raw      json.RawMessage
}

func (ev logEvent) label() string {
	switch ev.Kind {
	case "ActionEvent", "ObservationEvent":
		return ev.Kind + ":" + ev.ToolName
	case "MessageEvent":
		return ev.Kind + ":" + ev.Source
	case "ConversationStateUpdateEvent":
		if s, ok := ev.Value.(string); ok {
			return ev.Key + "=" + s
		}
		return ev.Key
	}
	return ev.Kind
}

// conversationLog reads a conversation's whole log through the API.
func (r *replica) conversationLog(ctx context.Context, t *testing.T, conv string) []logEvent {
	t.Helper()
	var all []logEvent
	page := ""
	for {
		var p struct {
			Items      []json.RawMessage `json:"items"`
			NextPageID *string           `json:"next_page_id"`
		}
		q := url.Values{"conversation_id__eq": {conv}, "page_id": {page}}
		if err := r.api.Do(ctx, "GET", "/api/v1/events/search", q, nil, &p); err != nil {
			t.Fatalf("%s: the conversation's log: %v", r.pod.Name, err)
		}
		for _, raw := range p.Items {
			var ev logEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			ev.raw = raw
			all = append(all, ev)
		}
		if p.NextPageID == nil {
			return all
		}
		page = *p.NextPageID
	}
}

// labels are the events' labels, less the updates that are not the agent's.
func labels(evs []logEvent) []string {
	var out []string
	for _, ev := range evs {
		switch ev.Key {
		case "stats", "start_task", "sandbox_status", "conversation_status":
		default:
			out = append(out, ev.label())
		}
	}
	return out
}

func ids(evs []logEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// finished reports whether the log's last agent status is finished.
func finished(evs []logEvent) bool {
	ls := labels(evs)
	return len(ls) > 0 && ls[len(ls)-1] == "execution_status=finished"
}

// sseStream collects the events of a conversation's SSE stream in the background.
type sseStream struct {
	mu   sync.Mutex
	ids  []string
	err  error
	done chan struct{}
}

func (s *sseStream) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// followSSE follows the conversation's SSE stream on r from its first event until the test
// ends.
func (r *replica) followSSE(t *testing.T, conv string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &sseStream{done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-st.done
	})
	req, err := http.NewRequestWithContext(ctx, "GET", r.base+"/api/v1/app-conversations/"+conv+"/events/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Session-API-Key", r.key)
	resp, err := r.streams.Do(req)
	if err != nil {
		t.Fatalf("%s: open the SSE stream: %v", r.pod.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s: open the SSE stream: %s", r.pod.Name, resp.Status)
	}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 1<<20)
		var data []byte
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				st.mu.Lock()
				st.err = err
				st.mu.Unlock()
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0 && data != nil:
				var ev logEvent
				if json.Unmarshal(data, &ev) == nil && ev.ID != "" && ev.Key != "full_state" {
					st.mu.Lock()
					st.ids = append(st.ids, ev.ID)
					st.mu.Unlock()
				}
				data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			}
		}
	}()
	return st
}

// checkStream waits until the stream has as many events as the log and checks that it
// carries the log's events in order, each once.
func checkStream(t *testing.T, name string, st *sseStream, log []logEvent) {
	t.Helper()
	want := ids(log)
	waitFor(t, time.Minute, name+" to carry every event", func() (bool, string) {
		got := st.events()
		return len(got) >= len(want), fmt.Sprintf("%d of %d", len(got), len(want))
	})
	if got := st.events(); !slices.Equal(got, want) {
		t.Errorf("%s: %d events, want the log's %d in order, each once:\n got %v\nwant %v", name, len(got), len(want), got, want)
	}
}
