package netpolicy

import (
	"errors"
	"net/netip"
	"testing"
)

func TestShorthandIPv4(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string // "" when host is no IPv4 shorthand
	}{
		{"127.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F000001", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0x7f.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.000.000.001", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"10.1.2", "10.1.0.2"},
		{"169.254.43518", "169.254.169.254"},
		{"134744072", "8.8.8.8"},
		{"010.0.0.1", "8.0.0.1"},
		{"4294967295", "255.255.255.255"},
		{"4294967296", ""},
		{"256.1", ""},
		{"1.2.3.4.5", ""},
		{"08", ""}, // not octal
		{"0x", ""},
		{"1..2", ""},
		{"deadbeef", ""},
		{"example.com", ""},
		{"1.2.3.example", ""},
		{"", ""},
	} {
		addr, ok := shorthandIPv4(tc.host)
		switch {
		case tc.want == "" && ok:
			t.Errorf("shorthandIPv4(%q) = %s, want none", tc.host, addr)
		case tc.want != "" && (!ok || addr != netip.MustParseAddr(tc.want)):
			t.Errorf("shorthandIPv4(%q) = %s %v, want %s", tc.host, addr, ok, tc.want)
		}
	}
}

// TestCheckURLRefusesShorthands: a URL whose host is a numeric shorthand of an IPv4 address
// is refused, with the rule of its address when the policy refuses that, and otherwise
// because it is a shorthand; the allow-list admitting the address changes only the words.
func TestCheckURLRefusesShorthands(t *testing.T) {
	p, err := New([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"http://127.1/hook", "127.1 is a shorthand of 127.0.0.1, a loopback address; internal addresses are refused unless the administrator allows them"},
		{"http://2130706433:8080/hook", "2130706433 is a shorthand of 127.0.0.1, a loopback address; internal addresses are refused unless the administrator allows them"},
		{"https://0x7f000001/", "0x7f000001 is a shorthand of 127.0.0.1, a loopback address; internal addresses are refused unless the administrator allows them"},
		{"http://0/", "0 is a shorthand of 0.0.0.0, an unspecified address; internal addresses are refused unless the administrator allows them"},
		{"http://169.254.43518/latest", "169.254.43518 is a shorthand of 169.254.169.254, a cloud metadata address; internal addresses are refused unless the administrator allows them"},
		{"http://10.1/hook", "10.1 is a shorthand of the address 10.0.0.1, which programs read differently; numeric hosts are taken only as four decimal numbers (10.0.0.1)"},
		{"http://134744072/", "134744072 is a shorthand of the address 8.8.8.8, which programs read differently; numeric hosts are taken only as four decimal numbers (8.8.8.8)"},
	} {
		err := p.CheckURL(t.Context(), tc.url, false)
		var se *ShorthandError
		if !errors.As(err, &se) || err.Error() != tc.want {
			t.Errorf("CheckURL(%s) = %v, want %q", tc.url, err, tc.want)
		}
		if err := p.CheckURL(t.Context(), tc.url, true); err != nil {
			t.Errorf("CheckURL(%s) for an admin = %v, want nil", tc.url, err)
		}
	}
}
