package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/wire"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"detail":"Internal Server Error"}`+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
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
