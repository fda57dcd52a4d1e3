package postgres

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Times are stored as timestamptz, in microseconds. The store accepts the times the SQLite
// store can keep (the years 1678 to 2262, as unix nanoseconds, and the zero time), so that
// both accept the same data and every stored time fits a page cursor, which carries
// nanoseconds.

var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkTimes rejects times outside the storable range. Writes call it first.
func checkTimes(ts ...time.Time) error {
	for _, t := range ts {
		if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
			return fmt.Errorf("time %s is outside the storable range", t)
		}
	}
	return nil
}

// timeArg is t for a filter: times out of range (only in filters, as writes check them
// first) are clamped, which keeps the filter's meaning.
func timeArg(t time.Time) time.Time {
	switch {
	case t.IsZero():
		return t
	case t.Before(minTime):
		return minTime
	case t.After(maxTime):
		return maxTime
	}
	return t
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// rawArg stores a raw JSON value as text, or NULL when it is empty.
func rawArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// fromRaw decodes what rawArg stored.
func fromRaw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// fromJSONList decodes a JSON list column as json.Unmarshal would, without the decoder for the
// values most rows hold ("null" and "[]").
func fromJSONList[T any](s string) ([]T, error) {
	switch s {
	case "null":
		return nil, nil
	case "[]":
		return []T{}, nil
	}
	var out []T
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// fromJSONMap is fromJSONList for a JSON object column ("null" and "{}").
func fromJSONMap[K comparable, V any](s string) (map[K]V, error) {
	switch s {
	case "null":
		return nil, nil
	case "{}":
		return map[K]V{}, nil
	}
	var out map[K]V
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// jsonArg marshals v for a JSON text column.
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// blobArg stores nil as NULL, so that a nil slice reads back as nil.
func blobArg(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// nullString stores "" as NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
