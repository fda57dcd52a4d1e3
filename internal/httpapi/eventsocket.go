package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/wire"
)

// The event socket of a conversation, served as OpenHands agent servers serve
// /sockets/events/{conversation_id}, under the sandbox's AGENT_SERVER URL. After
// authentication it sends the conversation's full state, then the past events asked for,
// then each event as it is stored; a client sends user messages, which the agent answers.
// It stays out of the route table (and so out of the OpenAPI document, which cannot
// describe a WebSocket) because it authenticates itself, possibly after the upgrade.

// agentSocket is the path of a conversation's event socket.
const agentSocket = "/agent-server/{sandbox_id}/sockets/events/{conversation_id}"

// Close codes of the event socket beside the standard ones: OpenHands'.
const (
	closeAuthFailed websocket.StatusCode = 4001
	closeNotFound   websocket.StatusCode = 4004
)

const reasonShutdown = "Server shutting down"

// closeBadStart closes a socket whose after_event_id names no event of its conversation:
// agentd's, in the manner of OpenHands' 4001 and 4004.
const closeBadStart websocket.StatusCode = 4400

// socketFrameBuffer is how many client frames may wait to be handled.
const socketFrameBuffer = 16

// frame is a data frame a client sent.
type frame struct {
	typ  websocket.MessageType
	data []byte
}

// eventSocket is one open event socket.
type eventSocket struct {
	a   *API
	o   SocketOptions
	c   *websocket.Conn
	tap *hijackTap
	log *slog.Logger
	// frames are the client's data frames, from the reader; closed when the peer leaves or
	// the connection ends.
	frames chan frame
	// stopped is closed when the socket's handler is done: the reader and pinger stop.
	stopped chan struct{}
}

// socketKey is the key a client gave when opening the socket, in OpenHands' order: the
// session_api_key query parameter, then the header. given is false when it gave none: the
// first frame must then authenticate.
func socketKey(r *http.Request, q apitypes.EventSocketQuery) (key string, given bool) {
	if r.URL.Query().Has("session_api_key") {
		return q.SessionAPIKey, true
	}
	key = requestKey(r)
	return key, key != ""
}

func (a *API) eventSocket(w http.ResponseWriter, r *http.Request) {
	var q apitypes.EventSocketQuery
	if err := decodeQuery(r, &q); err != nil {
		a.writeError(w, r, err)
		return
	}
	// An id no conversation can have is refused as an unknown one, once authenticated.
	convID, idErr := conversationIDFromPath(r)
	key, keyGiven := socketKey(r, q)
	var u auth.User
	var identErr error
	sandboxID := r.PathValue("sandbox_id")
	if keyGiven {
		// A key the client opened the socket with is checked before the upgrade, and a bad
		// one refused with 403, as OpenHands' agent servers do; an unknown conversation is
		// told after it (4004), as before.
		u, sandboxID, identErr = a.socketIdentity(r.Context(), r, key)
		if isAuthFailure(identErr) {
			writeJSON(w, http.StatusForbidden, detail("Authentication failed: not the sandbox's session key, nor its owner's API key"))
			return
		}
	}
	if !a.sockets.open() {
		a.writeError(w, r, errStatus(http.StatusServiceUnavailable, reasonShutdown))
		return
	}
	defer a.sockets.done()

	tap := &hijackTap{ResponseWriter: w}
	origin := r.Header.Get("Origin")
	c, err := websocket.Accept(tap, r, &websocket.AcceptOptions{
		// Pages of the same host always may connect; others when CORS allows their origin.
		InsecureSkipVerify: origin != "" && corsAllowed(a.d.CORSOrigins, origin),
	})
	if err != nil {
		a.log.Debug("event socket: upgrade refused", "err", err)
		return // Accept has answered
	}
	c.SetReadLimit(maxBodyBytes)
	s := &eventSocket{a: a, o: a.sockets.o, c: c, tap: tap,
		log:    a.log.With("sandbox_id", sandboxID, "conversation_id", convID),
		frames: make(chan frame, socketFrameBuffer), stopped: make(chan struct{})}
	readDone, pingDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(readDone); s.read() }()
	go func() { defer close(pingDone); s.keepAlive() }()
	defer func() {
		c.CloseNow()
		close(s.stopped)
		<-readDone
		<-pingDone
	}()

	if identErr != nil {
		s.fail(identErr)
		return
	}
	if !keyGiven {
		var ok bool
		if u, sandboxID, ok = s.authenticate(r); !ok {
			return
		}
	}
	if idErr != nil {
		s.fail(conversation.ErrNotFound)
		return
	}
	s.serve(u.ID, sandboxID, convID, q)
}

// socketIdentity checks a key given for an event socket and finds the sandbox the socket is
// for: the one in the path, or at the agent-server base the key's own sandbox or the
// sandbox of the user's conversation in the path.
func (a *API) socketIdentity(ctx context.Context, r *http.Request, key string) (auth.User, string, error) {
	sandboxID := r.PathValue("sandbox_id")
	if sandboxID == "" {
		var err error
		if sandboxID, err = a.baseSandbox(ctx, key, key, r); err != nil {
			var se *statusError
			if errors.As(err, &se) {
				// A malformed conversation id: no conversation has it.
				err = conversation.ErrNotFound
			}
			return auth.User{}, "", err
		}
	}
	u, err := a.authenticateSandboxKey(ctx, sandboxID, key)
	return u, sandboxID, err
}

// isAuthFailure reports whether err says a key is wrong.
func isAuthFailure(err error) bool {
	return errors.Is(err, auth.ErrUnauthorized) || errors.Is(err, sandbox.ErrSessionKey)
}

// read hands the client's data frames to the handler until the connection ends. Reading
// also answers the peer's pings and close frame.
func (s *eventSocket) read() {
	defer close(s.frames)
	for {
		typ, data, err := s.c.Read(context.Background())
		if err != nil {
			s.readFailed(err)
			return
		}
		select {
		case s.frames <- frame{typ, data}:
		case <-s.stopped:
			return
		}
	}
}

// readFailed closes the socket with 1002 when reading ended on a frame that breaks the
// protocol and the library cut the connection without a close frame of its own (it sends
// 1002 for most such frames, but not for an unmasked one). A close the peer sent, or a
// connection that is gone, needs none; a close already sent is not sent again.
func (s *eventSocket) readFailed(err error) {
	if websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) {
		return
	}
	s.close(websocket.StatusProtocolError, "Malformed frame: it breaks the WebSocket protocol")
}

// keepAlive pings the peer; one that has not answered by the next ping is cut off, which
// ends the socket.
func (s *eventSocket) keepAlive() {
	t := time.NewTicker(s.o.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopped:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.o.PingInterval)
		err := s.c.Ping(ctx)
		cancel()
		if err != nil {
			s.tap.cut()
			return
		}
	}
}

// authenticate awaits the key of a client that opened the socket without one, in its first
// frame ({"type": "auth", "session_api_key": "..."}), for AuthTimeout, and checks it. A
// failure closes the socket.
func (s *eventSocket) authenticate(r *http.Request) (auth.User, string, bool) {
	key, ok := s.awaitAuthFrame()
	if !ok {
		return auth.User{}, "", false
	}
	u, sandboxID, err := s.a.socketIdentity(s.a.sockets.ctx, r, key)
	if err != nil {
		s.fail(err)
		return auth.User{}, "", false
	}
	return u, sandboxID, true
}

func (s *eventSocket) awaitAuthFrame() (string, bool) {
	t := time.NewTimer(s.o.AuthTimeout)
	defer t.Stop()
	select {
	case <-s.a.sockets.ctx.Done():
		s.close(websocket.StatusGoingAway, reasonShutdown)
		return "", false
	case <-t.C:
	case f, ok := <-s.frames:
		if !ok {
			return "", false // the client left
		}
		var m apitypes.SocketAuth
		if f.typ == websocket.MessageText && json.Unmarshal(f.data, &m) == nil && m.Type == "auth" && m.SessionAPIKey != "" {
			return m.SessionAPIKey, true
		}
	}
	s.close(closeAuthFailed, "Authentication failed")
	return "", false
}

// serve streams the conversation to an authenticated client and takes its messages: the
// full state, then the conversation's feed (the replay asked for, then the live events).
func (s *eventSocket) serve(ownerID, sandboxID, convID string, q apitypes.EventSocketQuery) {
	ctx := s.a.sockets.ctx
	if _, err := s.a.sandboxConversation(ctx, ownerID, sandboxID, convID); err != nil {
		s.fail(err)
		return
	}
	if !s.a.sockets.join(convID) {
		s.close(websocket.StatusTryAgainLater, "Too many connections for this conversation")
		return
	}
	defer s.a.sockets.leave(convID)
	feed, err := s.a.d.Conversations.Follow(ctx, ownerID, convID, socketStart(q), s.o.EventBuffer)
	if err != nil {
		s.fail(err)
		return
	}
	defer feed.Close()
	// Read after the subscription: the state is not older than the first live event. The
	// events up to the newest one now are the past, which the state shows already.
	past, err := s.newestSeq(ownerID, convID)
	if err != nil {
		s.fail(err)
		return
	}
	v, err := s.a.sandboxConversation(ctx, ownerID, sandboxID, convID)
	if err != nil {
		s.fail(err)
		return
	}
	if !s.sendFullState(ownerID, v) {
		return
	}
	s.stream(ownerID, sandboxID, convID, feed, past)
}

// newestSeq is the Seq of the conversation's newest event, 0 when it has none.
func (s *eventSocket) newestSeq(ownerID, convID string) (int64, error) {
	evs, _, err := s.a.d.Conversations.SearchEvents(s.a.sockets.ctx, ownerID, event.Filter{ConversationID: convID}, true, paging.Query{Limit: 1})
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[0].Seq, nil
}

// socketStart is where the feed of a socket starts: after after_event_id; the whole log with
// resend_mode=all; the events from after_timestamp on with resend_mode=since (nothing
// without after_timestamp, as in OpenHands); otherwise live events only.
func socketStart(q apitypes.EventSocketQuery) conversation.FeedStart {
	mode := apitypes.ResendMode("")
	switch {
	case q.AfterEventID != nil:
		return conversation.FeedStart{AfterEventID: *q.AfterEventID}
	case q.ResendMode != nil:
		mode = *q.ResendMode
	case q.ResendAll:
		mode = "all"
	}
	switch {
	case mode == "all":
		return conversation.FeedStart{}
	case mode == "since" && q.AfterTimestamp != nil:
		return conversation.FeedStart{Since: q.AfterTimestamp}
	}
	return conversation.FeedStart{Live: true}
}

// sendFullState sends the ConversationStateUpdateEvent with key full_state that clients
// wait for: the conversation as GET …/api/conversations/{id} shows it, with agentd's status
// fields (apitypes.StreamState).
func (s *eventSocket) sendFullState(ownerID string, v conversation.View) bool {
	value, err := json.Marshal(s.a.streamState(s.a.sockets.ctx, ownerID, v))
	if err != nil {
		s.fail(fmt.Errorf("encode full state: %w", err))
		return false
	}
	ev, err := s.a.d.Conversations.NewEvent(event.SourceEnvironment, &event.StateUpdateEvent{Key: event.StateFull, Value: value})
	if err != nil {
		s.fail(err)
		return false
	}
	return s.send(ev.Body)
}

// endsRun reports whether e records an execution status other than running: a run ended
// (finished, idle, error, stuck) or was paused. OpenHands' clients then get the whole state
// again, with the run's stats.
func endsRun(e event.Event) bool {
	if e.Kind != event.KindStateUpdate {
		return false
	}
	var su event.StateUpdateEvent
	if json.Unmarshal(e.Body, &su) != nil || su.Key != event.StateExecutionStatus {
		return false
	}
	var status string
	return json.Unmarshal(su.Value, &status) == nil && status != "running"
}

// refreshState sends the conversation's full state as it is now.
func (s *eventSocket) refreshState(ownerID, sandboxID, convID string) bool {
	v, err := s.a.sandboxConversation(s.a.sockets.ctx, ownerID, sandboxID, convID)
	if err != nil {
		s.fail(err)
		return false
	}
	return s.sendFullState(ownerID, v)
}

// stream sends the feed's events and handles the client's frames until either side ends
// the socket. After a live event (newer than past) that ends a run, it sends the whole state
// again, as OpenHands' agent servers do.
func (s *eventSocket) stream(ownerID, sandboxID, convID string, feed *event.Feed, past int64) {
	ctx := s.a.sockets.ctx
	for {
		select {
		case <-ctx.Done():
			s.close(websocket.StatusGoingAway, reasonShutdown)
			return
		case f, ok := <-s.frames:
			if !ok {
				return // the client left
			}
			if !s.handle(ownerID, convID, f) {
				return
			}
		case e, ok := <-feed.C:
			if !ok {
				s.feedEnded(feed.Err())
				return
			}
			if !s.send(e.Body) {
				return
			}
			if e.Seq > past && endsRun(e) && !s.refreshState(ownerID, sandboxID, convID) {
				return
			}
		}
	}
}

// feedEnded closes the socket for the reason its feed ended.
func (s *eventSocket) feedEnded(err error) {
	switch {
	case errors.Is(err, event.ErrEnded):
		s.close(closeNotFound, "Conversation deleted")
	case errors.Is(err, event.ErrLagged):
		// The client reconnects with after_event_id (or resend_mode=since) and reads what it
		// missed.
		s.log.Info("event socket: client fell behind the event stream")
		s.close(websocket.StatusTryAgainLater, "Fell behind the event stream")
	default:
		s.fail(err)
	}
}

// handle takes one client frame: an SDK Message from the user is added to the conversation
// and the agent runs to answer it (as POST …/events with run); a redundant auth frame is
// ignored; anything else is answered with a ServerErrorEvent. It reports whether the socket
// stays open.
func (s *eventSocket) handle(ownerID, convID string, f frame) bool {
	if f.typ != websocket.MessageText {
		return s.sendError("ValueError", "Send messages as JSON in text frames.")
	}
	if !utf8.Valid(f.data) {
		// A text frame that is not UTF-8 breaks the protocol (RFC 6455, 8.1).
		s.close(websocket.StatusInvalidFramePayloadData, "The text frame is not valid UTF-8")
		return false
	}
	var obj map[string]any
	if json.Unmarshal(f.data, &obj) == nil && obj["type"] == "auth" {
		return true
	}
	var m apitypes.SocketMessage
	if err := wire.DecodeJSON(f.data, &m); err != nil {
		return s.sendError(frameProblem(err))
	}
	if m.Role != "user" {
		return s.sendError("ValueError", "Only messages with role user can be sent.")
	}
	ctx := s.a.sockets.ctx
	err := s.a.d.Conversations.SendMessage(ctx, ownerID, convID, messageOf(m.Content), true)
	switch {
	case err == nil, ctx.Err() != nil:
		return true
	case errors.Is(err, conversation.ErrNotFound):
		s.fail(err)
		return false
	case errors.Is(err, sandbox.ErrState):
		// The sandbox failed or is gone: the message is refused, saying why.
		return s.sendError("ValueError", capitalize(stateMessage(err)))
	}
	s.log.Error("event socket: send message", "err", err)
	return s.sendError("InternalServerError", "Internal Server Error")
}

// frameProblem words a frame's decoding problems as OpenHands does: the error's class and
// what is wrong where (never the input: it may hold secrets).
func frameProblem(err error) (code, detail string) {
	var we *wire.Error
	if !errors.As(err, &we) {
		return "ValidationError", "The frame is not a message."
	}
	var parts []string
	for _, p := range we.Problems {
		if p.Type == "json_invalid" {
			return "JSONDecodeError", p.Msg
		}
		var loc []string
		for _, l := range p.Loc[min(1, len(p.Loc)):] { // the first is "body"
			loc = append(loc, fmt.Sprint(l))
		}
		if len(loc) == 0 {
			parts = append(parts, p.Msg)
		} else {
			parts = append(parts, strings.Join(loc, ".")+": "+p.Msg)
		}
	}
	return "ValidationError", strings.Join(parts, "; ")
}

// sendError sends a ServerErrorEvent.
func (s *eventSocket) sendError(code, detail string) bool {
	ev, err := s.a.d.Conversations.NewEvent(event.SourceEnvironment, &event.ServerErrorEvent{Code: code, Detail: detail})
	if err != nil {
		s.fail(err)
		return false
	}
	return s.send(ev.Body)
}

// send writes one frame; a peer that does not take it within WriteTimeout is cut off. The
// bound is the connection's write deadline, cleared after the frame (pings and the close
// handshake bound their own writes with a context): a context per frame, which the library
// watches, cost more than the frame's own write, and a dozen allocations.
func (s *eventSocket) send(data []byte) bool {
	conn := s.tap.conn
	if conn.SetWriteDeadline(time.Now().Add(s.o.WriteTimeout)) != nil {
		return false
	}
	err := s.c.Write(context.Background(), websocket.MessageText, data)
	return conn.SetWriteDeadline(time.Time{}) == nil && err == nil
}

// close closes the socket with a close handshake; a peer that has not answered within
// closeGrace is cut off.
func (s *eventSocket) close(code websocket.StatusCode, reason string) {
	t := time.AfterFunc(closeGrace, s.tap.cut)
	defer t.Stop()
	s.c.Close(code, reason)
}

// fail closes the socket for err with the code OpenHands clients know, or 1011 for an
// error of ours (logged, never sent).
func (s *eventSocket) fail(err error) {
	switch {
	case s.a.sockets.ctx.Err() != nil:
		s.close(websocket.StatusGoingAway, reasonShutdown)
	case isAuthFailure(err):
		s.close(closeAuthFailed, "Authentication failed")
	case errors.Is(err, conversation.ErrNotFound), errors.Is(err, sandbox.ErrNotFound):
		// Also a valid owner's key used for a sandbox of someone else's, as the REST API's 404.
		s.close(closeNotFound, "Conversation not found")
	case errors.Is(err, conversation.ErrUnknownEvent):
		s.close(closeBadStart, "after_event_id names no event of this conversation")
	default:
		s.log.Error("event socket failed", "err", err)
		s.close(websocket.StatusInternalError, "Internal Server Error")
	}
}
