package netpolicy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNewAllowList(t *testing.T) {
	p, err := New([]string{"10.0.0.0/8", " 127.0.0.1 ", "::1", "Ollama.Internal.", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, addr string
		refused    bool
	}{
		{"", "10.9.8.7", false},
		{"", "::ffff:10.9.8.7", false}, // a mapped address is its IPv4 address
		{"", "127.0.0.1", false},
		{"", "127.0.0.2", true},
		{"", "::1", false},
		{"", "fd12::1", false},
		{"", "192.168.1.1", true},
		{"ollama.internal", "192.168.1.1", false}, // the name admits what it resolves to
		{"OLLAMA.internal.", "192.168.1.1", false},
		{"other.internal", "192.168.1.1", true},
		{"", "8.8.8.8", false},
	} {
		err := p.Check(tc.host, netip.MustParseAddr(tc.addr))
		if refused := err != nil; refused != tc.refused {
			t.Errorf("Check(%q, %s) = %v, want refused %v", tc.host, tc.addr, err, tc.refused)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "300.1.2.3", "http://x", "a b"} {
		if _, err := New([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("New(%q) = %v, want an error naming the entry", bad, err)
		}
	}
}

func TestRefusedErrorNamesTheRule(t *testing.T) {
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, addr, want string }{
		{"", "127.0.0.1", "127.0.0.1 is a loopback address; internal addresses are refused unless the administrator allows them"},
		{"localhost", "::1", "localhost resolves to ::1, a loopback address; internal addresses are refused unless the administrator allows them"},
		{"", "fe80::1%eth0", "fe80::1 is a link-local address; internal addresses are refused unless the administrator allows them"},
		{"", "0.0.0.0", "0.0.0.0 is an unspecified address; internal addresses are refused unless the administrator allows them"},
		{"metadata.google.internal", "169.254.169.254", "metadata.google.internal resolves to 169.254.169.254, a cloud metadata address; internal addresses are refused unless the administrator allows them"},
	} {
		err := p.Check(tc.host, netip.MustParseAddr(tc.addr))
		var re *RefusedError
		if !errors.As(err, &re) || err.Error() != tc.want {
			t.Errorf("Check(%q, %s) = %v, want %q", tc.host, tc.addr, err, tc.want)
		}
	}
	re := &RefusedError{Addr: netip.MustParseAddr("10.0.0.1"), Class: Private}
	if got, want := re.Explain("llm_base_url"), "llm_base_url resolves to 10.0.0.1, a private address; internal addresses are refused unless the administrator allows them"; got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
}

func TestCheckURL(t *testing.T) {
	p, err := New([]string{"allowed.internal"})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string][]netip.Addr{
		"api.example.com": {netip.MustParseAddr("93.184.215.14")},
		"sneaky.example":  {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.7")},
		"meta.example":    {netip.MustParseAddr("169.254.169.254")},
	}
	p.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := answers[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		url   string
		admin bool
		want  string // "" for no error
	}{
		{"https://api.example.com/v1", false, ""},
		{"http://127.0.0.1:11434/v1", false, "127.0.0.1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]:80/", false, "127.0.0.1 is a loopback address"},
		{"http://[fd00:ec2::254]/latest", false, "fd00:ec2::254 is a cloud metadata address"},
		{"http://sneaky.example/v1", false, "sneaky.example resolves to 10.0.0.7, a private address"},
		{"http://meta.example/", false, "meta.example resolves to 169.254.169.254, a cloud metadata address"},
		{"http://allowed.internal/v1", false, ""},
		{"http://unknown.example/v1", false, ""}, // checked when connecting
		{"http://127.0.0.1:11434/v1", true, ""},  // admins are exempt
		{"http://meta.example/", true, ""},
		{"not a url", false, "the URL has no host"},
	} {
		err := p.CheckURL(t.Context(), tc.url, tc.admin)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%s, admin %v) = %v, want nil", tc.url, tc.admin, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("CheckURL(%s, admin %v) = %v, want %q", tc.url, tc.admin, err, tc.want)
		}
	}
}

func TestAdmits(t *testing.T) {
	p, err := New([]string{"git.internal", "10.1.0.0/16", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string][]netip.Addr{
		"gitlab.lan":     {netip.MustParseAddr("10.1.2.3")},
		"half.lan":       {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("93.184.215.14")},
		"public.example": {netip.MustParseAddr("93.184.215.14")},
	}
	p.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := answers[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		host  string
		admin bool
		want  bool
	}{
		{"git.internal", false, true},
		{"GIT.internal.", false, true},
		{"10.1.9.9", false, true},
		{"::1", false, true},
		{"[::1]", false, true},
		{"gitlab.lan", false, true},
		{"half.lan", false, false},
		{"public.example", false, false},
		{"127.0.0.1", false, false},
		{"nowhere.example", false, false},
		{"public.example", true, true},
	} {
		if got := p.Admits(t.Context(), tc.host, tc.admin); got != tc.want {
			t.Errorf("Admits(%s, admin %v) = %v, want %v", tc.host, tc.admin, got, tc.want)
		}
	}
}
