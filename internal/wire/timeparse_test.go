package wire

import (
	"testing"
	"time"
)

func TestParseDateTime(t *testing.T) {
	plus2 := time.FixedZone("", 2*3600)
	ok := map[string]time.Time{
		"2024-02-29":                       time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"2024-01-02T03:04:05Z":             time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		"2024-01-02t03:04:05z":             time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		"2024-01-02 03:04":                 time.Date(2024, 1, 2, 3, 4, 0, 0, time.UTC),
		"2024-01-02_03:04:05.123456789123": time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC),
		"2024-01-02T03:04:05,5+02:00":      time.Date(2024, 1, 2, 3, 4, 5, 5e8, plus2),
		"2024-01-02T03:04:05+0200":         time.Date(2024, 1, 2, 3, 4, 5, 0, plus2),
		"2024-01-02T03:04:05+02":           time.Date(2024, 1, 2, 3, 4, 5, 0, plus2),
		"2024-01-02T03:04:05-00:00":        time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	for in, want := range ok {
		got, reason := parseDateTime(in)
		if reason != "" || !got.Equal(want) {
			t.Errorf("%q: got %v %q, want %v", in, got, reason, want)
		}
	}
	bad := map[string]string{
		"":                          "input is too short",
		"2024-01":                   "input is too short",
		"20x4-01-01":                "invalid character in year",
		"2024/01/01":                "invalid date separator, expected `-`",
		"2024-0a-01":                "invalid character in month",
		"2024-01-0a":                "invalid character in day",
		"2024-00-01":                "month value is outside expected range of 1-12",
		"2023-02-29":                "day value is outside expected range",
		"2024-01-01X10:00":          "invalid datetime separator, expected `T`, `t`, `_` or space",
		"2024-01-01T10":             "input is too short",
		"2024-01-01Tx0:00":          "invalid character in hour",
		"2024-01-01T10-00":          "invalid time separator, expected `:`",
		"2024-01-01T10:x0":          "invalid character in minute",
		"2024-01-01T24:00":          "hour value is outside expected range of 0-23",
		"2024-01-01T23:60":          "minute value is outside expected range of 0-59",
		"2024-01-01T23:59:6":        "input is too short",
		"2024-01-01T23:59:6x":       "invalid character in second",
		"2024-01-01T23:59:60":       "second value is outside expected range of 0-59",
		"2024-01-01T23:59:59.":      "invalid character in second fraction",
		"2024-01-01T23:59:59+2":     "invalid timezone offset, expected ±HH:MM",
		"2024-01-01T23:59:59+25:00": "invalid timezone offset, expected ±HH:MM",
		"2024-01-01T23:59:59+02:":   "invalid timezone offset, expected ±HH:MM",
		"2024-01-01T23:59:59 UTC":   "invalid timezone sign",
		"2024-01-01T23:59:59Zjunk":  "unexpected extra characters at the end of the input",
	}
	for in, want := range bad {
		if _, reason := parseDateTime(in); reason != want {
			t.Errorf("%q: got %q, want %q", in, reason, want)
		}
	}
}

func TestDecodeJSONTime(t *testing.T) {
	var v struct {
		At time.Time `json:"at"`
	}
	checkProblems(t, DecodeJSON([]byte(`{"at": "2024-01-01T25:00:00Z"}`), &v), []Problem{
		P("datetime_from_date_parsing", "Input should be a valid datetime or date, hour value is outside expected range of 0-23", "body", "at"),
	})
}
