package web

import (
	"context"
	"net/http"
	"time"

	"github.com/agentd/agentd/internal/sse"
)

// heartbeat is how often an idle stream sends a comment, which keeps proxies from closing it.
const heartbeat = 15 * time.Second

// writeTimeout is how long a page may take to take one event of its stream before the
// stream is cut off (the page then reconnects and resumes).
const writeTimeout = 10 * time.Second

// startStream answers a page's stream, which ends soon after ctx does (the app closing)
// even when the page takes nothing; stop must run before the handler returns.
func startStream(ctx context.Context, w http.ResponseWriter) (out *sse.Writer, stop func(), err error) {
	out, err = sse.Start(w, writeTimeout)
	if err != nil {
		return nil, nil, err
	}
	return out, out.CutWhen(ctx), nil
}

// comeBack answers a stream that a closing server cannot serve: an empty event stream that
// tells the browser when to reconnect, which EventSource does without an error (an answer of
// another type would end it for good and log one).
func comeBack(w http.ResponseWriter) error {
	out, err := sse.Start(w, writeTimeout)
	if err != nil {
		return nil
	}
	out.Retry(time.Second)
	return nil
}
