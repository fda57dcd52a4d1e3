package wire

import (
	"net/url"
	"reflect"
	"testing"
	"time"
)

type Paging struct {
	PageID *string `query:"page_id" doc:"Cursor from the previous page"`
	Limit  int     `query:"limit" wire:"min=1,max=100,default=20"`
}

type ListQuery struct {
	Paging
	Q        string     `query:"q" wire:"required,maxlen=5"`
	Status   Mode       `query:"status" wire:"default=fast"`
	Provider *Provider  `query:"provider"`
	Archived *bool      `query:"archived"`
	Verbose  bool       `query:"verbose"`
	MinScore float64    `query:"min_score" wire:"min=0"`
	Since    *time.Time `query:"since"`
	Until    time.Time  `query:"until"`
	IDs      []string   `query:"ids" wire:"maxlen=2"`
	Sizes    []uint16   `query:"size"`
	Offset   *int       `query:"offset" wire:"default=0"`
	NotQuery string     `json:"not_query"`
}

func TestDecodeQuery(t *testing.T) {
	cases := []struct {
		name  string
		query string
		want  []Problem
		check func(t *testing.T, q *ListQuery)
	}{
		{name: "defaults", query: "q=abc&unknown=1",
			check: func(t *testing.T, q *ListQuery) {
				want := ListQuery{Q: "abc", Status: "fast", Paging: Paging{Limit: 20}, Offset: q.Offset}
				if !reflect.DeepEqual(*q, want) || q.Offset == nil || *q.Offset != 0 {
					t.Fatalf("decoded %+v", q)
				}
			}},
		{name: "missing required", query: "", want: []Problem{P("missing", "Field required", "query", "q")}},
		{name: "every kind", query: "q=x&page_id=p1&limit=50&status=slow&provider=gitlab&archived=Yes&verbose=on" +
			"&min_score=0.25&since=2024-01-02T03:04:05&until=2024-01-02&ids=a&ids=b&size=1&size=2&offset=5",
			check: func(t *testing.T, q *ListQuery) {
				if *q.PageID != "p1" || q.Limit != 50 || q.Status != "slow" || *q.Provider != "gitlab" ||
					!*q.Archived || !q.Verbose || q.MinScore != 0.25 ||
					!q.Since.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) ||
					!q.Until.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) ||
					!reflect.DeepEqual(q.IDs, []string{"a", "b"}) || !reflect.DeepEqual(q.Sizes, []uint16{1, 2}) || *q.Offset != 5 {
					t.Fatalf("decoded %+v", q)
				}
			}},
		{name: "last value wins", query: "q=a&q=b&limit=1&limit=2&archived=false&archived=0",
			check: func(t *testing.T, q *ListQuery) {
				if q.Q != "b" || q.Limit != 2 || *q.Archived {
					t.Fatalf("decoded %+v", q)
				}
			}},
		{name: "parse errors in field order", query: "q=toolong&limit=ten&status=medium&provider=svn&archived=maybe" +
			"&verbose=&min_score=abc&since=2024-13-01&until=yesterday!&ids=a&ids=b&ids=c&size=1&size=x&size=70000&offset=1.5",
			want: []Problem{
				P("int_parsing", "Input should be a valid integer, unable to parse string as an integer", "query", "limit"),
				P("string_too_long", "String should have at most 5 characters", "query", "q"),
				P("enum", "Input should be 'fast' or 'slow'", "query", "status"),
				P("enum", "Input should be 'github', 'gitlab' or 'bitbucket'", "query", "provider"),
				P("bool_parsing", "Input should be a valid boolean, unable to interpret input", "query", "archived"),
				P("bool_parsing", "Input should be a valid boolean, unable to interpret input", "query", "verbose"),
				P("float_parsing", "Input should be a valid number, unable to parse string as a number", "query", "min_score"),
				P("datetime_from_date_parsing", "Input should be a valid datetime or date, month value is outside expected range of 1-12", "query", "since"),
				P("datetime_from_date_parsing", "Input should be a valid datetime or date, invalid character in year", "query", "until"),
				P("too_long", "List should have at most 2 items after validation, not 3", "query", "ids"),
				P("int_parsing", "Input should be a valid integer, unable to parse string as an integer", "query", "size", 1),
				P("less_than_equal", "Input should be less than or equal to 65535", "query", "size", 2),
				P("int_parsing", "Input should be a valid integer, unable to parse string as an integer", "query", "offset"),
			}},
		{name: "bounds", query: "q=x&limit=0&min_score=-1",
			want: []Problem{
				P("greater_than_equal", "Input should be greater than or equal to 1", "query", "limit"),
				P("greater_than_equal", "Input should be greater than or equal to 0", "query", "min_score"),
			}},
		{name: "upper bound", query: "q=x&limit=101",
			want: []Problem{P("less_than_equal", "Input should be less than or equal to 100", "query", "limit")}},
		{name: "numbers tolerate spaces", query: "q=x&limit=+7+&min_score=1e1",
			check: func(t *testing.T, q *ListQuery) {
				if q.Limit != 7 || q.MinScore != 10 {
					t.Fatalf("decoded %+v", q)
				}
			}},
		{name: "non-finite float", query: "q=x&min_score=NaN",
			want: []Problem{P("finite_number", "Input should be a finite number", "query", "min_score")}},
		{name: "empty string is a value", query: "q=",
			check: func(t *testing.T, q *ListQuery) {
				if q.Q != "" {
					t.Fatalf("decoded %+v", q)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			var q ListQuery
			checkProblems(t, DecodeQuery(vals, &q), tc.want)
			if tc.check != nil {
				tc.check(t, &q)
			}
		})
	}
}

func TestDecodeQueryBools(t *testing.T) {
	for _, s := range []string{"true", "TRUE", "1", "yes", "On", "t", "y"} {
		var q ListQuery
		if err := DecodeQuery(url.Values{"q": {"x"}, "verbose": {s}}, &q); err != nil || !q.Verbose {
			t.Errorf("%q: %v %v", s, q.Verbose, err)
		}
	}
	for _, s := range []string{"false", "False", "0", "no", "OFF", "f", "n"} {
		q := ListQuery{Verbose: true}
		if err := DecodeQuery(url.Values{"q": {"x"}, "verbose": {s}}, &q); err != nil || q.Verbose {
			t.Errorf("%q: %v %v", s, q.Verbose, err)
		}
	}
}

type RangeQuery struct {
	From int `query:"from"`
	To   int `query:"to"`
}

func (r RangeQuery) ValidateWire(c *Checker) {
	if r.To < r.From {
		c.ValueError("to must not be before from", "to")
	}
}

func TestDecodeQueryValidator(t *testing.T) {
	var r RangeQuery
	checkProblems(t, DecodeQuery(url.Values{"from": {"5"}, "to": {"1"}}, &r),
		[]Problem{P("value_error", "Value error, to must not be before from", "query", "to")})
	// The validator does not run when a parameter failed to parse.
	checkProblems(t, DecodeQuery(url.Values{"from": {"x"}, "to": {"1"}}, &r),
		[]Problem{P("int_parsing", msgIntParsing, "query", "from")})
}

func TestDecodeQueryBadDst(t *testing.T) {
	var s string
	if err := DecodeQuery(url.Values{}, &s); err == nil {
		t.Fatal("no error for a non-struct")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an unsupported field type")
		}
	}()
	_ = DecodeQuery(url.Values{}, &struct {
		M map[string]string `query:"m"`
	}{})
}
