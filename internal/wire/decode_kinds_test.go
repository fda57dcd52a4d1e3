package wire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// Hex decodes from text, like uuid.UUID.
type Hex [2]byte

func (h *Hex) UnmarshalText(b []byte) error {
	_, err := hex.Decode(h[:], b)
	return err
}

// Celsius decodes itself from JSON.
type Celsius struct{ V float64 }

func (c *Celsius) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &c.V); err != nil {
		return err
	}
	if c.V < -273.15 {
		return errors.New("below absolute zero: " + string(b))
	}
	return nil
}

// Timeout accepts "30s", 30 or {"seconds": 30}.
type Timeout struct{ Seconds int }

func (x *Timeout) DecodeWire(v any, d *Decoder) {
	switch v := v.(type) {
	case string:
		dur, err := time.ParseDuration(v)
		if err != nil {
			d.Problem("value_error", "Value error, invalid duration")
			return
		}
		x.Seconds = int(dur.Seconds())
	case map[string]any:
		s, ok := v["seconds"]
		if !ok {
			d.Problem("missing", msgMissing, "seconds")
			return
		}
		d.At("seconds").Decode(s, &x.Seconds)
	default:
		d.Decode(v, &x.Seconds)
	}
}

type Kinds struct {
	Pair     [2]int           `json:"pair"`
	Blob     []byte           `json:"blob"`
	Num      json.Number      `json:"num"`
	ID       Hex              `json:"id"`
	Temp     Celsius          `json:"temp"`
	Timeouts []Timeout        `json:"timeouts"`
	Big      int64            `json:"big"`
	U        uint64           `json:"u" wire:"min=5,max=10"`
	Half     int              `json:"half" wire:"min=0.5"`
	Neg      int              `json:"neg" wire:"max=-2"`
	Opts     map[string]*bool `json:"opts"`
}

func TestDecodeJSONKinds(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "valid", dst: func() any { return &Kinds{} },
			body: `{"pair": [1, 2], "blob": "aGk=", "num": 1.50, "id": "beef", "temp": 21.5,
				"timeouts": ["1m", 5, {"seconds": 7}], "big": -9223372036854775808, "u": 10, "half": 1, "neg": -2,
				"opts": {"a": true, "b": null}}`,
			check: func(t *testing.T, dst any) {
				k := dst.(*Kinds)
				want := Kinds{Pair: [2]int{1, 2}, Blob: []byte("hi"), Num: "1.50", ID: Hex{0xbe, 0xef}, Temp: Celsius{21.5},
					Timeouts: []Timeout{{60}, {5}, {7}}, Big: -9223372036854775808, U: 10, Half: 1, Neg: -2, Opts: k.Opts}
				if !reflect.DeepEqual(*k, want) || !*k.Opts["a"] || k.Opts["b"] != nil || len(k.Opts) != 2 {
					t.Fatalf("decoded %+v", k)
				}
			}},
		{name: "invalid", dst: func() any { return &Kinds{} },
			body: `{"pair": [1, 2, 3], "blob": "!!", "num": "1", "id": "zz", "temp": -300,
				"timeouts": ["soon", {}, {"seconds": "x"}, true], "big": -1e19, "u": 18446744073709551615,
				"half": 0, "neg": 9223372036854775807, "opts": {"x": 1}}`,
			want: []Problem{
				P("too_long", "List should have at most 2 items after validation, not 3", "body", "pair"),
				P("base64_decode", "Base64 decoding error", "body", "blob"),
				P("float_type", "Input should be a valid number", "body", "num"),
				P("value_error", "Value error, invalid Hex", "body", "id"),
				P("value_error", "Value error, invalid Celsius", "body", "temp"),
				P("value_error", "Value error, invalid duration", "body", "timeouts", 0),
				P("missing", "Field required", "body", "timeouts", 1, "seconds"),
				P("int_type", "Input should be a valid integer", "body", "timeouts", 2, "seconds"),
				P("int_type", "Input should be a valid integer", "body", "timeouts", 3),
				P("greater_than_equal", "Input should be greater than or equal to -9223372036854775808", "body", "big"),
				P("less_than_equal", "Input should be less than or equal to 10", "body", "u"),
				P("greater_than_equal", "Input should be greater than or equal to 0.5", "body", "half"),
				P("less_than_equal", "Input should be less than or equal to -2", "body", "neg"),
				P("bool_type", "Input should be a valid boolean", "body", "opts", "x"),
			}},
		{name: "short array and wrong containers", dst: func() any { return &Kinds{} },
			body: `{"pair": [1], "blob": 5, "id": 5, "timeouts": {}}`,
			want: []Problem{
				P("too_short", "List should have at least 2 items after validation, not 1", "body", "pair"),
				P("bytes_type", "Input should be a valid bytes", "body", "blob"),
				P("string_type", "Input should be a valid string", "body", "id"),
				P("list_type", "Input should be a valid list", "body", "timeouts"),
			}},
		{name: "huge integers", dst: func() any { return &Kinds{} },
			body: `{"big": 99999999999999999999, "u": -99999999999999999999, "half": 1e400, "neg": -1e400}`,
			want: []Problem{
				P("less_than_equal", "Input should be less than or equal to 9223372036854775807", "body", "big"),
				P("greater_than_equal", "Input should be greater than or equal to 0", "body", "u"),
				P("less_than_equal", "Input should be less than or equal to 9223372036854775807", "body", "half"),
				P("greater_than_equal", "Input should be greater than or equal to -9223372036854775808", "body", "neg"),
			}},
		{name: "uint above int64 within bounds check", dst: func() any {
			return &struct {
				U uint64 `json:"u" wire:"min=-1"`
			}{}
		}, body: `{"u": 1.8e19}`},
		{name: "top-level unmarshaler accepts null", dst: func() any { return &Timeout{} }, body: `null`,
			want: []Problem{P("int_type", "Input should be a valid integer", "body")}},
	})
}

// locProbe records the location its Decoder was handed.
type locProbe struct{}

var probedLocs [][]any

func (*locProbe) DecodeWire(_ any, d *Decoder) { probedLocs = append(probedLocs, d.Loc()) }

func TestDecoderLoc(t *testing.T) {
	probedLocs = nil
	var dst struct {
		P []locProbe `json:"p"`
	}
	checkProblems(t, DecodeJSON([]byte(`{"p": [1, 2]}`), &dst), nil)
	want := [][]any{{"body", "p", 0}, {"body", "p", 1}}
	if !reflect.DeepEqual(probedLocs, want) {
		t.Fatalf("locs %v, want %v", probedLocs, want)
	}
}
