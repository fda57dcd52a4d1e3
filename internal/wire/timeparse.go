package wire

import "time"

// parseDateTime parses the ISO 8601 forms pydantic accepts for a datetime:
// a date alone (midnight UTC), or a date and time separated by T, t, _ or a
// space, with optional seconds, fraction and zone; no zone means UTC. On
// failure it returns a reason worded like pydantic's (speedate's), so the
// problem tells the client what is wrong without repeating the input.
func parseDateTime(s string) (time.Time, string) {
	if len(s) < 10 {
		return time.Time{}, "input is too short"
	}
	year, ok := digits(s[0:4])
	if !ok {
		return time.Time{}, "invalid character in year"
	}
	if s[4] != '-' || s[7] != '-' {
		return time.Time{}, "invalid date separator, expected `-`"
	}
	month, ok := digits(s[5:7])
	if !ok {
		return time.Time{}, "invalid character in month"
	}
	day, ok := digits(s[8:10])
	if !ok {
		return time.Time{}, "invalid character in day"
	}
	if month < 1 || month > 12 {
		return time.Time{}, "month value is outside expected range of 1-12"
	}
	if day < 1 || day > daysIn(year, month) {
		return time.Time{}, "day value is outside expected range"
	}
	if len(s) == 10 {
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), ""
	}
	switch s[10] {
	case 'T', 't', ' ', '_':
	default:
		return time.Time{}, "invalid datetime separator, expected `T`, `t`, `_` or space"
	}

	r := s[11:]
	if len(r) < 5 {
		return time.Time{}, "input is too short"
	}
	hour, ok := digits(r[0:2])
	if !ok {
		return time.Time{}, "invalid character in hour"
	}
	if r[2] != ':' {
		return time.Time{}, "invalid time separator, expected `:`"
	}
	minute, ok := digits(r[3:5])
	if !ok {
		return time.Time{}, "invalid character in minute"
	}
	if hour > 23 {
		return time.Time{}, "hour value is outside expected range of 0-23"
	}
	if minute > 59 {
		return time.Time{}, "minute value is outside expected range of 0-59"
	}
	i, sec, nsec := 5, 0, 0
	if i < len(r) && r[i] == ':' {
		if len(r) < i+3 {
			return time.Time{}, "input is too short"
		}
		if sec, ok = digits(r[i+1 : i+3]); !ok {
			return time.Time{}, "invalid character in second"
		}
		if sec > 59 {
			return time.Time{}, "second value is outside expected range of 0-59"
		}
		i += 3
		if i < len(r) && (r[i] == '.' || r[i] == ',') {
			i++
			start := i
			scale := 100000000
			for i < len(r) && r[i] >= '0' && r[i] <= '9' {
				// Digits past nanoseconds are dropped, as Go's own parser does.
				nsec += int(r[i]-'0') * scale
				scale /= 10
				i++
			}
			if i == start {
				return time.Time{}, "invalid character in second fraction"
			}
		}
	}

	loc := time.UTC
	if i < len(r) {
		switch r[i] {
		case 'Z', 'z':
			i++
		case '+', '-':
			off, n, ok := zoneOffset(r[i:])
			if !ok {
				return time.Time{}, "invalid timezone offset, expected ±HH:MM"
			}
			if off != 0 {
				loc = time.FixedZone("", off)
			}
			i += n
		default:
			return time.Time{}, "invalid timezone sign"
		}
	}
	if i != len(r) {
		return time.Time{}, "unexpected extra characters at the end of the input"
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc), ""
}

// zoneOffset parses ±HH, ±HHMM or ±HH:MM at the start of z and returns the
// offset in seconds and the number of bytes used.
func zoneOffset(z string) (secs, n int, ok bool) {
	if len(z) < 3 {
		return 0, 0, false
	}
	h, ok := digits(z[1:3])
	if !ok || h > 23 {
		return 0, 0, false
	}
	m, n := 0, 3
	rest := z[3:]
	if len(rest) > 0 && rest[0] == ':' {
		rest, n = rest[1:], n+1
	}
	if len(rest) >= 2 {
		if m, ok = digits(rest[0:2]); !ok || m > 59 {
			return 0, 0, false
		}
		n += 2
	} else if n == 4 {
		return 0, 0, false // a colon with no minutes
	}
	secs = (h*60 + m) * 60
	if z[0] == '-' {
		secs = -secs
	}
	return secs, n, true
}

// digits parses a fixed-width run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
