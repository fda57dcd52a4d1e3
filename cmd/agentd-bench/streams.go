package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// The live streams' figures: from the call that appends an event (SendMessage stores a user
// message and publishes it) to its arrival at each subscriber of the conversation, on event
// sockets and on SSE streams, with 1 and with 100 subscribers; beside a bare broadcast of the
// same bytes to as many loopback TCP readers, a round of which comes before each of agentd's,
// so that both meet the same load of the machine. Each round waits until every subscriber has
// the event before the next, so the figures are latencies, not queueing.

// streamMarker starts the text of the bench's messages; the round's number follows.
const streamMarker = "agentd-bench stream "

// arrival is one subscriber's receipt of a round's event.
type arrival struct {
	round int
	at    time.Time
}

func benchStreams(ctx context.Context, s *server, o options, progress func(string, ...any)) ([]row, []string, error) {
	rounds := o.streamRounds
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	convID, err := s.quietConversation(ctx, sb.ID)
	if err != nil {
		return nil, nil, err
	}
	sample, err := event.NewUserMessage("00000000-0000-4000-8000-000000000000", time.Now(), streamMarker+strconv.Itoa(rounds), nil)
	if err != nil {
		return nil, nil, err
	}
	payload := append(bytes.Clone(sample.Body), '\n')
	stopProfile, err := s.profile(o, "streams")
	if err != nil {
		return nil, nil, err
	}
	defer stopProfile()

	var rows []row
	appends := map[int][]time.Duration{} // by the number of subscribers
	for _, n := range []int{1, 100} {
		bc, err := openBroadcast(n, payload)
		if err != nil {
			return nil, nil, err
		}
		for _, kind := range []string{"WebSocket", "SSE"} {
			progress("timing %d events to %d %s subscribers and as many loopback TCP readers", rounds, n, kind)
			t, err := s.timeStream(ctx, s, kind, sb.ID, convID, n, rounds, bc)
			if err != nil {
				bc.close()
				return nil, nil, err
			}
			got, bare := t.arrivals, t.bare
			appends[n] = append(appends[n], t.appends...)
			for _, p := range []float64{50, 99} {
				figure := fmt.Sprintf("event append → arrival at %d %s subscriber(s), p%.0f", n, kind, p)
				rows = append(rows, timeRow(figure, p, got, bare, fmt.Sprintf("the same bytes written to %d loopback TCP reader(s)", n)))
			}
		}
		bc.close()
	}
	notes := []string{fmt.Sprintf("streams: %d rounds per figure; a round appends one user message (SendMessage: masking, an SQLite commit, the publication) and ends when every subscriber has read its event; each subscriber's time counts. "+
		"The append alone (until SendMessage returns) took %s at the median and %s at p99 in the rounds with one subscriber, %s and %s in those with 100. "+
		"The primitive writes the event's bytes (%d) to each connection in turn from one goroutine and times each reader's arrival; its rounds alternate with agentd's.",
		rounds, unitTime.format(seconds(percentile(appends[1], 50))), unitTime.format(seconds(percentile(appends[1], 99))),
		unitTime.format(seconds(percentile(appends[100], 50))), unitTime.format(seconds(percentile(appends[100], 99))), len(payload))}
	return rows, notes, nil
}

// quietConversation starts a conversation without a message in the sandbox: its agent records
// its system prompt and waits.
func (s *server) quietConversation(ctx context.Context, sandboxID string) (string, error) {
	var task struct {
		ID string `json:"id"`
	}
	if err := s.call(ctx, "POST", "/api/v1/app-conversations", map[string]any{"sandbox_id": sandboxID}, &task); err != nil {
		return "", err
	}
	ids, err := s.waitTasksReady(ctx, []string{task.ID})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// streamTimes are what timeStream measures.
type streamTimes struct {
	// arrivals are each subscriber's times to each event; appends each append's until
	// SendMessage returned; bare the broadcast's times, with one.
	arrivals, appends, bare []time.Duration
}

// timeStream opens n subscribers of kind ("WebSocket" or "SSE") on the conversation on s,
// appends rounds events through writer (s itself, or another replica of its database) and
// times them; with bc, a round of bc's broadcast comes before each event. The subscribers
// are closed before it returns, and s has let them go.
func (s *server) timeStream(ctx context.Context, writer *server, kind, sandboxID, convID string, n, rounds int, bc *broadcast) (streamTimes, error) {
	// Room for every time, and below one timer per round: the bench's clients share the
	// server's process, so their garbage would be collected on the server's time.
	t := streamTimes{arrivals: make([]time.Duration, 0, n*rounds), appends: make([]time.Duration, 0, rounds)}
	if bc != nil {
		t.bare = make([]time.Duration, 0, n*rounds)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		// The server's handlers take a moment to leave; the next figure needs their places.
		for deadline := time.Now().Add(time.Minute); s.app.Conversations.Followers(convID) > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}()
	arrivals := make(chan arrival, n)
	errs := make(chan error, n)
	for range n {
		var read func() error
		var err error
		switch kind {
		case "WebSocket":
			read, err = s.openSocket(ctx, sandboxID, convID, arrivals)
		default:
			read, err = s.openSSE(ctx, convID, arrivals)
		}
		if err != nil {
			return t, err
		}
		go func() { errs <- read() }()
	}
	for r := range rounds {
		if bc != nil {
			b, err := bc.round(ctx)
			if err != nil {
				return t, err
			}
			t.bare = append(t.bare, b...)
		}
		start := time.Now()
		err := writer.app.Conversations.SendMessage(ctx, writer.ownerID, convID, conversation.Message{Text: streamMarker + strconv.Itoa(r)}, false)
		if err != nil {
			return t, err
		}
		t.appends = append(t.appends, time.Since(start))
		timeout := time.NewTimer(time.Minute)
		for got := 0; got < n; {
			select {
			case a := <-arrivals:
				if a.round == r {
					t.arrivals, got = append(t.arrivals, a.at.Sub(start)), got+1
				}
			case err := <-errs:
				return t, fmt.Errorf("%s subscriber: %w", kind, err)
			case <-timeout.C:
				return t, fmt.Errorf("%s: round %d reached %d of %d subscribers in a minute", kind, r, got, n)
			}
		}
		timeout.Stop()
	}
	return t, nil
}

// roundOf returns the round whose message data holds, or -1.
func roundOf(data []byte) int {
	i := bytes.Index(data, []byte(streamMarker))
	if i < 0 {
		return -1
	}
	rest := data[i+len(streamMarker):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	r, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		return -1
	}
	return r
}

// deliver hands a round's arrival on, if data is a round's event; false once ctx has ended.
func deliver(ctx context.Context, arrivals chan<- arrival, data []byte, at time.Time) bool {
	r := roundOf(data)
	if r < 0 {
		return true
	}
	select {
	case arrivals <- arrival{r, at}:
		return true
	case <-ctx.Done():
		return false
	}
}

// openSocket opens a live-only event socket and returns the loop that reads it.
func (s *server) openSocket(ctx context.Context, sandboxID, convID string, arrivals chan<- arrival) (func() error, error) {
	u := "ws" + s.url[len("http"):] + "/agent-server/" + sandboxID + "/sockets/events/" + convID
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"X-Session-API-Key": {s.key}}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(8 << 20)
	// The full state comes once the socket follows the conversation.
	if _, _, err := c.Read(ctx); err != nil {
		c.CloseNow()
		return nil, fmt.Errorf("event socket: %w", err)
	}
	// The loop reads as a client in a process of its own would: into one buffer, and without
	// a context per message (the library watches each with an AfterFunc); the end of ctx
	// closes the connection instead, which ends the read.
	return func() error {
		stop := context.AfterFunc(ctx, func() { c.CloseNow() })
		defer stop()
		defer c.CloseNow()
		var buf bytes.Buffer
		for {
			_, r, err := c.Reader(context.Background())
			if err == nil {
				buf.Reset()
				_, err = buf.ReadFrom(r)
			}
			at := time.Now()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if !deliver(ctx, arrivals, buf.Bytes(), at) {
				return nil
			}
		}
	}, nil
}

// openSSE opens an SSE stream after the conversation's newest event and returns the loop that
// reads it.
func (s *server) openSSE(ctx context.Context, convID string, arrivals chan<- arrival) (func() error, error) {
	newest, _, err := s.app.Conversations.SearchEvents(ctx, s.ownerID, event.Filter{ConversationID: convID}, true, paging.Query{Limit: 1})
	if err != nil || len(newest) == 0 {
		return nil, fmt.Errorf("newest event: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/app-conversations/"+convID+"/events/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Session-API-Key", s.key)
	req.Header.Set("Last-Event-ID", newest[0].ID)
	// A client of its own: each stream holds its connection for good.
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("event stream: %s: %s", resp.Status, body)
	}
	// The full state comes once the stream follows the conversation.
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("event stream: %w", err)
		}
		if bytes.HasPrefix(line, []byte("data: ")) {
			break
		}
	}
	return func() error {
		defer resp.Body.Close()
		for {
			line, err := br.ReadSlice('\n')
			at := time.Now()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if bytes.HasPrefix(line, []byte("data: ")) && !deliver(ctx, arrivals, line, at) {
				return nil
			}
		}
	}, nil
}

// broadcast is the streams' primitive: n loopback TCP connections, each with a reader, to
// which a round writes the payload one after the other from one goroutine.
type broadcast struct {
	payload  []byte
	ln       net.Listener
	conns    []net.Conn // client, server, client, server...
	arrivals chan time.Time
}

func openBroadcast(n int, payload []byte) (*broadcast, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &broadcast{payload: payload, ln: ln, arrivals: make(chan time.Time, n)}
	for range n {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.close()
			return nil, err
		}
		b.conns = append(b.conns, client)
		srv, err := ln.Accept()
		if err != nil {
			b.close()
			return nil, err
		}
		b.conns = append(b.conns, srv)
		go func() {
			br := bufio.NewReaderSize(client, 64<<10)
			for {
				if _, err := br.ReadSlice('\n'); err != nil {
					return
				}
				b.arrivals <- time.Now()
			}
		}()
	}
	return b, nil
}

// round writes the payload to every connection and returns each reader's time to it.
func (b *broadcast) round(ctx context.Context) ([]time.Duration, error) {
	start := time.Now()
	for i := 1; i < len(b.conns); i += 2 {
		if _, err := b.conns[i].Write(b.payload); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, len(b.conns)/2)
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for range len(b.conns) / 2 {
		select {
		case at := <-b.arrivals:
			out = append(out, at.Sub(start))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return nil, errors.New("a bare broadcast took over a minute")
		}
	}
	return out, nil
}

// close closes the connections, which ends their readers.
func (b *broadcast) close() {
	for _, c := range b.conns {
		c.Close()
	}
	b.ln.Close()
}
