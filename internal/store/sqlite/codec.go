package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Times are stored as unix nanoseconds, which cover the years 1678 to 2262. The zero time.Time
// (year 1) is outside that range and is stored as math.MinInt64, which also sorts it first.
const zeroNanos = math.MinInt64

var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkTimes rejects times that cannot be stored exactly. Writes call it before nanos.
func checkTimes(ts ...time.Time) error {
	for _, t := range ts {
		if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
			return fmt.Errorf("time %s is outside the storable range", t)
		}
	}
	return nil
}

// nanos encodes t. Times out of range (only possible in filters, as writes check them first)
// are clamped, which keeps a filter's meaning.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return zeroNanos
	case t.Before(minTime):
		return zeroNanos + 1
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// fromNanos decodes a stored time, in UTC.
func fromNanos(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nullNanos encodes an optional time as NULL or nanoseconds.
func nullNanos(t *time.Time) any {
	if t == nil {
		return nil
	}
	return nanos(*t)
}

// fromNullNanos decodes an optional time.
func fromNullNanos(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// rawArg stores a raw JSON value as TEXT, or NULL when it is empty.
func rawArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// fromRaw decodes what rawArg stored.
func fromRaw(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// fromJSONList decodes a JSON list column as json.Unmarshal would, without the decoder for the
// values most rows hold ("null" and "[]"): a listing reads several such columns per row.
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

// jsonArg marshals v for a JSON TEXT column.
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
