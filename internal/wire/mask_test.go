package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

type maskServer struct {
	URL    string            `json:"url"`
	APIKey *string           `json:"api_key" wire:"secret"`
	Env    map[string]string `json:"env" wire:"secret"`
}

// maskUnion holds values and names of stored values: only the values are secret.
type maskUnion struct {
	Values map[string]string
	Names  []string
}

func (u maskUnion) MaskSecrets(mask string) any {
	out := maskUnion{Names: u.Names, Values: map[string]string{}}
	for k := range u.Values {
		out.Values[k] = mask
	}
	return out
}

type maskRequest struct {
	Title    *string                `json:"title"`
	Servers  []maskServer           `json:"servers"`
	ByName   map[string]*maskServer `json:"by_name"`
	Token    string                 `json:"token" wire:"required,secret"`
	Empty    string                 `json:"empty" wire:"secret"`
	Keys     []string               `json:"keys" wire:"secret"`
	Union    *maskUnion             `json:"union" wire:"secret"`
	Plain    maskUnion              `json:"plain"`
	Unknown  any                    `json:"unknown" wire:"secret"`
	internal string
}

// TestMaskSecrets: every value below a field tagged secret is masked in the copy, and the
// original, with everything it shares, is as it was.
func TestMaskSecrets(t *testing.T) {
	key, title := "sk-server-key", "a title"
	in := maskRequest{
		Title:   &title,
		Servers: []maskServer{{URL: "https://a.example", APIKey: &key, Env: map[string]string{"A": "1", "B": "2"}}, {URL: "https://b.example"}},
		ByName:  map[string]*maskServer{"x": {URL: "https://x.example", APIKey: &key}},
		Token:   "tok", Keys: []string{"k1", "k2"},
		Union:   &maskUnion{Values: map[string]string{"S": "v"}, Names: []string{"stored"}},
		Plain:   maskUnion{Values: map[string]string{"P": "visible"}, Names: []string{"n"}},
		Unknown: "left alone", internal: "kept",
	}
	before, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := MaskSecrets(in)
	after, _ := json.Marshal(in)
	if string(after) != string(before) || key != "sk-server-key" {
		t.Fatalf("the original changed:\n%s\n%s", before, after)
	}
	m := Mask
	want := maskRequest{
		Title:   &title,
		Servers: []maskServer{{URL: "https://a.example", APIKey: &m, Env: map[string]string{"A": Mask, "B": Mask}}, {URL: "https://b.example"}},
		ByName:  map[string]*maskServer{"x": {URL: "https://x.example", APIKey: &m}},
		Token:   Mask, Keys: []string{Mask, Mask},
		Union:   &maskUnion{Values: map[string]string{"S": Mask}, Names: []string{"stored"}},
		Plain:   maskUnion{Values: map[string]string{"P": "visible"}, Names: []string{"n"}},
		Unknown: "left alone", internal: "kept",
	}
	if !reflect.DeepEqual(out, want) {
		got, _ := json.Marshal(out)
		exp, _ := json.Marshal(want)
		t.Fatalf("masked:\n%s\nwant:\n%s", got, exp)
	}
	// Nothing secret to mask: the value itself comes back, sharing what it shared.
	plain := maskRequest{Servers: []maskServer{{URL: "https://c.example"}}}
	if got := MaskSecrets(plain); &got.Servers[0] != &plain.Servers[0] {
		t.Fatal("a value without secrets was copied")
	}
}
