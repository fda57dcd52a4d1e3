package paging

import (
	"errors"
	"testing"
	"time"
)

func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 21, 18, 0, 0, 123456789, time.UTC)
	c, err := Decode(Encode(at, "abc:def"))
	if err != nil || !c.Time.Equal(at) || c.ID != "abc:def" {
		t.Fatalf("round trip = %+v, %v", c, err)
	}
	if c, err := Decode(""); c != nil || err != nil {
		t.Fatalf("empty cursor = %+v, %v; want first page", c, err)
	}
	for _, bad := range []string{"!!", "bm9jb2xvbg", "eDox", "MTI6"} { // not base64, no colon, bad number, no id
		if _, err := Decode(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("Decode(%q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[int]int{0: DefaultLimit, -5: DefaultLimit, 1: 1, 100: 100, 500: MaxLimit} {
		if got := (Query{Limit: in}).Normalize().Limit; got != want {
			t.Errorf("Normalize(%d) = %d, want %d", in, got, want)
		}
	}
}
