package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
	"github.com/agentd/agentd/internal/webhook"
)

// verify is the recipe docs/api.md gives receivers: HMAC-SHA256 with the secret of
// "<X-Agentd-Timestamp>.<body>", hex, compared in constant time with X-Agentd-Signature
// after its "sha256=".
func verify(secret string, h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(h.Get("X-Agentd-Timestamp") + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(h.Get("X-Agentd-Signature")))
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an endpoint on loopback that answers with status (or holds the request while
// hold is open) and keeps what it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status int
	hold   chan struct{}
	signal chan struct{}
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status, signal: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		status, hold := r.status, r.hold
		r.mu.Unlock()
		select { // a test reads at most the first hundred; later ones need no reader
		case r.signal <- struct{}{}:
		default:
		}
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

type world struct {
	store   *sqlite.Store
	keyring *secret.Keyring
	dir     string
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	kr, err := secret.LoadOrCreate(filepath.Join(dir, "keyring.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &world{store: st, keyring: kr, dir: dir}
}

func (w *world) service(t *testing.T, o webhook.Options) *webhook.Service {
	o.Store, o.Sealer = w.store, w.keyring
	s := webhook.NewService(o)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// waitDelivery waits until the webhook's only delivery is in status want.
func waitDelivery(t *testing.T, s *webhook.Service, owner, hookID string, want webhook.Status) webhook.Delivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, _, err := s.Deliveries(t.Context(), owner, hookID, "", paging.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].Status == want {
			return ds[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %+v, want one %s", ds, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func finished(owner, conv string) webhook.Event {
	return webhook.Event{Kind: webhook.KindConversationFinished, OwnerID: owner, ConversationIDs: []string{conv},
		SandboxID: "sb-1", Data: map[string]any{"final_message": "All done."}}
}

func TestSignedDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rcv := newReceiver(t, http.StatusNoContent)
	s := w.service(t, webhook.Options{UserAgent: "agentd-webhooks/test"})
	hook, secret, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: rcv.URL + "/hook", Kinds: []string{webhook.KindConversationFinished}})
	if err != nil {
		t.Fatal(err)
	}
	// Another kind, another owner: not for this webhook.
	s.Notify(t.Context(), webhook.Event{Kind: webhook.KindConversationCreated, OwnerID: "alice", ConversationIDs: []string{"c1"}})
	s.Notify(t.Context(), finished("bob", "c1"))
	s.Notify(t.Context(), finished("alice", "c1"))
	d := waitDelivery(t, s, "alice", hook.ID, webhook.StatusDelivered)
	if d.Attempts != 1 || d.ResponseCode != 204 || d.Error != "" {
		t.Fatalf("delivery %+v", d)
	}
	reqs := rcv.requests()
	if len(reqs) != 1 {
		t.Fatalf("the receiver got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if !verify(secret, r.header, r.body) {
		t.Fatalf("the signature does not verify: %v", r.header)
	}
	if verify(secret+"x", r.header, r.body) || verify(secret, r.header, append(r.body, ' ')) {
		t.Fatal("the signature verifies with a wrong secret or body")
	}
	ts, err := strconv.ParseInt(r.header.Get("X-Agentd-Timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Hour {
		t.Fatalf("timestamp %q", r.header.Get("X-Agentd-Timestamp"))
	}
	for k, want := range map[string]string{"X-Agentd-Event": "conversation.finished", "X-Agentd-Delivery": d.ID,
		"Content-Type": "application/json", "User-Agent": "agentd-webhooks/test"} {
		if got := r.header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	var p struct {
		ID, Event, WebhookID string
		Data                 map[string]any
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != d.ID || p.Event != "conversation.finished" || p.Data["conversation_id"] != "c1" ||
		p.Data["final_message"] != "All done." || p.Data["sandbox_id"] != "sb-1" {
		t.Fatalf("payload %s", r.body)
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rcv := newReceiver(t, http.StatusOK)
	s := w.service(t, webhook.Options{
		SandboxConversations: func(_ context.Context, owner, sandboxID string) ([]string, error) {
			if sandboxID == "sb-1" {
				return []string{"c1"}, nil
			}
			return nil, nil
		},
	})
	one, _, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: rcv.URL, Kinds: []string{"*"}, ConversationID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Notify(t.Context(), finished("alice", "c2"))
	s.Notify(t.Context(), webhook.Event{Kind: webhook.KindSandboxPaused, OwnerID: "alice", SandboxID: "sb-2"})
	s.Notify(t.Context(), webhook.Event{Kind: webhook.KindSandboxPaused, OwnerID: "alice", SandboxID: "sb-1"})
	d := waitDelivery(t, s, "alice", one.ID, webhook.StatusDelivered)
	if d.Kind != webhook.KindSandboxPaused || !json.Valid(d.Payload) {
		t.Fatalf("delivery %+v", d)
	}
	var p struct{ Data map[string]any }
	_ = json.Unmarshal(d.Payload, &p)
	if ids, _ := p.Data["conversation_ids"].([]any); len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("payload %s", d.Payload)
	}
}

func TestCreateRefuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.service(t, webhook.Options{
		CheckURL: func(_ context.Context, _, raw string) error {
			if raw == "http://10.0.0.1/hook" {
				return &struct{ error }{io.EOF}
			}
			return nil
		},
		ConversationExists: func(_ context.Context, _, id string) (bool, error) { return id == "c1", nil },
	})
	for _, tc := range []struct {
		name  string
		req   webhook.CreateRequest
		field string
	}{
		{"no scheme", webhook.CreateRequest{URL: "hooks.example.com", Kinds: []string{"*"}}, "url"},
		{"ftp", webhook.CreateRequest{URL: "ftp://hooks.example.com", Kinds: []string{"*"}}, "url"},
		{"credentials", webhook.CreateRequest{URL: "https://u:p@hooks.example.com", Kinds: []string{"*"}}, "url"},
		{"policy", webhook.CreateRequest{URL: "http://10.0.0.1/hook", Kinds: []string{"*"}}, "url"},
		{"unknown kind", webhook.CreateRequest{URL: "https://hooks.example.com", Kinds: []string{"conversation.exploded"}}, "events"},
		{"no kind", webhook.CreateRequest{URL: "https://hooks.example.com"}, "events"},
		{"unknown conversation", webhook.CreateRequest{URL: "https://hooks.example.com", Kinds: []string{"*"}, ConversationID: "c2"}, "conversation_id"},
	} {
		_, _, err := s.Create(t.Context(), "alice", tc.req)
		var ie *webhook.InvalidError
		if !asInvalid(err, &ie) || ie.Field != tc.field {
			t.Errorf("%s: %v, want an InvalidError on %s", tc.name, err, tc.field)
		}
	}
	if ws, _ := s.List(t.Context(), "alice"); len(ws) != 0 {
		t.Fatalf("refused webhooks were stored: %+v", ws)
	}
}

func asInvalid(err error, target **webhook.InvalidError) bool {
	ie, ok := err.(*webhook.InvalidError)
	*target = ie
	return ok
}

// TestRetriedThenFailed: an endpoint that keeps failing is tried again, with the same
// delivery id, until the retry period is over, and the delivery is then failed; a
// redelivery sends it again with the same id.
func TestRetriedThenFailed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rcv := newReceiver(t, http.StatusInternalServerError)
	// The service's clock jumps past the retry window once the receiver has seen two
	// attempts, so the test waits for attempts, not for time, however slow the machine.
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	s := w.service(t, webhook.Options{FirstRetry: time.Millisecond, RetryFor: time.Hour, Now: now})
	hook, _, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: rcv.URL, Kinds: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Notify(t.Context(), finished("alice", "c1"))
	<-rcv.signal
	<-rcv.signal
	skew.Store(int64(2 * time.Hour))
	d := waitDelivery(t, s, "alice", hook.ID, webhook.StatusFailed)
	reqs := rcv.requests()
	if d.Attempts < 2 || len(reqs) != d.Attempts || d.ResponseCode != 500 || d.Error == "" {
		t.Fatalf("failed delivery %+v after %d requests", d, len(reqs))
	}
	for _, r := range reqs {
		if r.header.Get("X-Agentd-Delivery") != d.ID {
			t.Fatalf("attempt with delivery id %q, want %q", r.header.Get("X-Agentd-Delivery"), d.ID)
		}
	}
	rcv.setStatus(http.StatusOK)
	if _, err := s.Redeliver(t.Context(), "alice", hook.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	again := waitDelivery(t, s, "alice", hook.ID, webhook.StatusDelivered)
	if again.ID != d.ID || again.ResponseCode != 200 || again.Error != "" {
		t.Fatalf("redelivered %+v", again)
	}
	if last := rcv.requests(); last[len(last)-1].header.Get("X-Agentd-Delivery") != d.ID {
		t.Fatal("the redelivery has another id")
	}
	if _, err := s.Redeliver(t.Context(), "bob", hook.ID, d.ID); err == nil {
		t.Fatal("another user redelivered alice's delivery")
	}
}

// TestSlowEndpoint: an endpoint that does not answer holds up neither Notify nor another
// webhook's deliveries, and its attempt ends at the timeout.
func TestSlowEndpoint(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slow, fast := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	slow.hold = make(chan struct{})
	t.Cleanup(func() { close(slow.hold) })
	// Attempts that fail (the slow one's, or the fast one's on a busy machine) are retried.
	s := w.service(t, webhook.Options{Timeout: time.Second, FirstRetry: 10 * time.Millisecond})
	slowHook, _, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: slow.URL, Kinds: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	fastHook, _, err := s.Create(t.Context(), "alice", webhook.CreateRequest{URL: fast.URL, Kinds: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Notify(t.Context(), finished("alice", "c1"))
	waitDelivery(t, s, "alice", fastHook.ID, webhook.StatusDelivered)
	<-slow.signal
	// The slow attempt times out and waits for its retry.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, _, _ := s.Deliveries(t.Context(), "alice", slowHook.ID, "", paging.Query{})
		if len(ds) == 1 && ds[0].Attempts >= 1 {
			if ds[0].Status != webhook.StatusPending || ds[0].ResponseCode != 0 || ds[0].Error != "no answer within 1s" {
				t.Fatalf("slow delivery %+v", ds[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow delivery %+v", ds)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRestartDuringRetries: a service closed while a delivery waits for its retry, and one
// closed in the middle of an attempt, leave it pending; the next service over the same store
// delivers it, with the same id, and no other.
func TestRestartDuringRetries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rcv := newReceiver(t, http.StatusServiceUnavailable)
	first := webhook.NewService(webhook.Options{Store: w.store, Sealer: w.keyring, Timeout: time.Second,
		FirstRetry: 20 * time.Millisecond, RetryFor: time.Hour})
	first.Start()
	hook, secret, err := first.Create(t.Context(), "alice", webhook.CreateRequest{URL: rcv.URL, Kinds: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	first.Notify(t.Context(), finished("alice", "c1"))
	<-rcv.signal
	<-rcv.signal // two failed attempts: the delivery is in its retries
	// The next attempt hangs; the service closes in the middle of it.
	rcv.mu.Lock()
	rcv.hold = make(chan struct{})
	rcv.mu.Unlock()
	<-rcv.signal
	first.Close()

	rcv.mu.Lock()
	rcv.hold, rcv.status = nil, http.StatusOK
	rcv.mu.Unlock()
	// The claim of the cut attempt lapses after twice its bound (2 s).
	second := w.service(t, webhook.Options{FirstRetry: 20 * time.Millisecond, RetryFor: time.Hour})
	d := waitDelivery(t, second, "alice", hook.ID, webhook.StatusDelivered)
	ids := map[string]int{}
	for _, r := range rcv.requests() {
		ids[r.header.Get("X-Agentd-Delivery")]++
		if !verify(secret, r.header, r.body) {
			t.Fatal("an attempt after the restart does not verify")
		}
	}
	if len(ids) != 1 || ids[d.ID] == 0 {
		t.Fatalf("delivery ids sent: %v, want only %s", ids, d.ID)
	}
	if d.Attempts < 3 {
		t.Fatalf("attempts %d, want the two before the restart counted", d.Attempts)
	}
}
