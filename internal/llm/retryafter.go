package llm

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads how long a response asks the client to wait: the "retry-after-ms"
// header (milliseconds, sent by OpenAI and Anthropic), else "Retry-After" in seconds or as an
// HTTP date relative to now. It returns 0 when neither is present or valid.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
