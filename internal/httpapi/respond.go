package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/wire"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := appendJSON(buf, v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"detail":"Internal Server Error"}`+"\n")
		return
	}
	buf.WriteByte('\n')
	writeBuffer(w, status, buf)
}

// writeBuffer sends buf, a whole JSON answer, with the headers every JSON answer has, and its
// length: a listing of 100 KB then goes out as it is, not in chunks.
func writeBuffer(w http.ResponseWriter, status int, buf *bytes.Buffer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// writePage writes a page as writeJSON writes the page types of apitypes: {"items":[...],
// "next_page_id":...}, each item appended to buf by item.
func writePage(w http.ResponseWriter, n int, next string, item func(buf *bytes.Buffer, i int)) {
	writeList(w, "items", n, next, item)
}

// writeList writes a page as writePage does, its items under field: the V0 result sets'
// {"results":[...],"next_page_id":...}.
func writeList(w http.ResponseWriter, field string, n int, next string, item func(buf *bytes.Buffer, i int)) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(`{"`)
	buf.WriteString(field)
	buf.WriteString(`":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		item(buf, i)
	}
	buf.WriteString(`],"next_page_id":`)
	if next == "" {
		buf.WriteString("null")
	} else {
		appendJSON(buf, next)
	}
	buf.WriteString("}\n")
	writeBuffer(w, http.StatusOK, buf)
}

// appendJSON appends v as writeJSON writes it, less the newline.
func appendJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}

// writeEventPage writes a page of events with each event's body spliced in as stored. The
// store holds only bodies the service marshalled, so they are compact, valid JSON already;
// encoding/json would read every byte of them again to compact them, which was the largest
// cost of an event listing.
func writeEventPage(w http.ResponseWriter, evs []event.Event, next string) {
	writePage(w, len(evs), next, func(buf *bytes.Buffer, i int) {
		if len(evs[i].Body) == 0 {
			buf.WriteString("null")
		} else {
			buf.Write(evs[i].Body)
		}
	})
}

// Answers are built in pooled buffers: a listing's is about 100 KB, and allocating it anew for
// every request made a good part of the garbage a loaded server collects.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer bounds what the pool keeps, so one huge answer does not stay in memory.
const maxPooledBuffer = 1 << 20

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// readBody reads the request body, mapping an oversized body to 413 and one that did not
// arrive in time (see limitBody) to 408.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyError(err)
	}
	return data, nil
}

// bodyError is the answer to a request whose body could not be read: over its bound (413),
// too slow (408), or broken off.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errStatus(http.StatusRequestEntityTooLarge, "Request body too large")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errStatus(http.StatusRequestTimeout, "The request body did not arrive in time")
	}
	return errStatus(http.StatusBadRequest, "Could not read the request body")
}

// decodeBody reads and decodes a JSON body into dst, returning the raw bytes too.
func decodeBody(r *http.Request, dst any) ([]byte, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	// JSON text is UTF-8 (RFC 8259). encoding/json would turn invalid bytes inside strings
	// into U+FFFD and accept the body; FastAPI refuses it with this 400.
	if !utf8.Valid(data) {
		return nil, errStatus(http.StatusBadRequest, "There was an error parsing the body")
	}
	if err := wire.DecodeJSON(data, dst); err != nil {
		return nil, err
	}
	return data, nil
}

// decodeQuery decodes the query string into dst.
func decodeQuery(r *http.Request, dst any) error {
	return wire.DecodeQuery(r.URL.Query(), dst)
}

// caller returns the authenticated user; routes that are not public always have one.
func caller(r *http.Request) auth.User {
	u, _ := auth.FromContext(r.Context())
	return u
}

func ptr[T any](v T) *T { return &v }

// optString returns nil for "" so empty values serialise as null.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
