package sqlite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/paging"
)

func TestTimeRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{
		{},
		time.Unix(0, 0).UTC(),
		time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC),
		time.Date(2025, 3, 1, 12, 0, 0, 1, time.FixedZone("x", 3600)),
		minTime.UTC(),
		maxTime.UTC(),
	} {
		if err := checkTimes(tm); err != nil {
			t.Fatalf("checkTimes(%v): %v", tm, err)
		}
		got := fromNanos(nanos(tm))
		if !got.Equal(tm) || got.Location() != time.UTC {
			t.Errorf("round trip of %v gave %v", tm, got)
		}
	}
	if err := checkTimes(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("checkTimes accepted the year 3000")
	}
}

// Zero times sort first and page like any other.
func TestZeroTimePaging(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.CreateUser(t.Context(), auth.User{ID: fmt.Sprint("u", i), Name: fmt.Sprint("n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	late := auth.User{ID: "late", Name: "late", CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.CreateUser(t.Context(), late); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := paging.Query{Limit: 1}
	for {
		us, next, err := s.ListUsers(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if u.ID != "late" && !u.CreatedAt.IsZero() {
				t.Fatalf("user %s: zero CreatedAt read back as %v", u.ID, u.CreatedAt)
			}
			got = append(got, u.ID)
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	if fmt.Sprint(got) != "[u0 u1 u2 late]" {
		t.Fatalf("users %v, want [u0 u1 u2 late]", got)
	}
	if err := s.CreateUser(t.Context(), auth.User{ID: "far", Name: "far", CreatedAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Fatal("stored a time past 2262")
	}
}

// The JSON columns' fast paths decode as json.Unmarshal does, nil and empty apart.
func TestJSONColumnsDecodeAsUnmarshal(t *testing.T) {
	for _, s := range []string{"null", "[]", "[1,2,3]", "[ ]", "{}", `"x"`, ""} {
		got, gotErr := fromJSONList[int](s)
		var want []int
		wantErr := json.Unmarshal([]byte(s), &want)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
			t.Errorf("list %q: got %#v, %v; want %#v, %v", s, got, gotErr, want, wantErr)
		}
	}
	for _, s := range []string{"null", "{}", `{"a":"b"}`, "{ }", "[]", ""} {
		got, gotErr := fromJSONMap[string, string](s)
		var want map[string]string
		wantErr := json.Unmarshal([]byte(s), &want)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
			t.Errorf("map %q: got %#v, %v; want %#v, %v", s, got, gotErr, want, wantErr)
		}
	}
}
