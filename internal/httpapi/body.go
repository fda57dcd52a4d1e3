package httpapi

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// maxBodyBytes bounds request bodies; images arrive as URLs, not uploads.
const maxBodyBytes = 8 << 20

// DefaultMaxUploadBytes bounds a file uploaded into a workspace when Deps.MaxUploadBytes is
// zero.
const DefaultMaxUploadBytes = 100 << 20

// multipartSlack is what an upload's body may hold besides the file: boundaries and part
// headers.
const multipartSlack = 64 << 10

// DefaultBodyTimeout bounds the arrival of a request body when Deps.BodyTimeout is zero.
const DefaultBodyTimeout = time.Minute

// limitBody bounds the request body in size and in time: its connection gets a read deadline
// until the body has been read to its end, so a client that sends a body slowly, or never
// finishes it, holds the connection for at most the timeout and is then answered 408 (see
// readBody) and disconnected. The deadline is set before the handler runs, so that it also
// bounds what the server reads of a body the handler left unread. Requests without a body,
// WebSockets among them, get no deadline.
func limitBody(w http.ResponseWriter, r *http.Request, timeout time.Duration, limit int64) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		// Only connections that cannot take deadlines (none that net/http serves over
		// HTTP/1) end up here; the size bound still holds.
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		return
	}
	r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), rc: rc}
}

// deadlineBody lifts the read deadline once the body has been read to its end: what follows
// (the handler's work, the server's wait for the next request) has timeouts of its own.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
