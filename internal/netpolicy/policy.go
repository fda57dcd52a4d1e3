package netpolicy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Policy decides which addresses the control plane may connect to for a user. Internal
// addresses (every Class but Public) are refused unless the administrator's allow-list
// admits them; administrators are exempt. Safe for concurrent use.
type Policy struct {
	nets  []netip.Prefix
	hosts map[string]bool
	// lookup resolves a name for CheckURL; nil means the system resolver, which the
	// connections use too.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// guarded is the client for non-admins, open the one for admins.
	guarded, open *http.Client
}

// lookupTimeout bounds CheckURL's name resolution, which only serves a clear early answer:
// the connection is checked again anyway.
const lookupTimeout = 5 * time.Second

// New returns the policy with the administrator's allow-list. Each entry is a prefix
// (10.0.0.0/8, fd00::/8), an address (127.0.0.1, ::1) or a host name (ollama.internal,
// matched exactly, ignoring case), which admits every address the name resolves to.
func New(allow []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}}
	for _, entry := range allow {
		entry = strings.TrimSpace(entry)
		if pfx, err := netip.ParsePrefix(entry); err == nil {
			p.nets = append(p.nets, pfx.Masked())
		} else if addr, err := netip.ParseAddr(entry); err == nil {
			p.nets = append(p.nets, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
		} else if isHostName(entry) {
			p.hosts[canonicalHost(entry)] = true
		} else {
			return nil, fmt.Errorf("allow-list entry %q: want a prefix (10.0.0.0/8), an address or a host name", entry)
		}
	}
	// Proxies from the environment are not used: through a proxy the policy would see only
	// the proxy's address, never the one the user's URL names.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	open := http.DefaultTransport.(*http.Transport).Clone()
	open.MaxIdleConnsPerHost = maxIdleConnsPerHost
	p.guarded = &http.Client{Transport: t}
	p.open = &http.Client{Transport: open}
	return p, nil
}

// maxIdleConnsPerHost is how many idle connections to one host the clients keep: many
// conversations may call one user's model server at once, and Go's default of 2 made most of
// their calls open a new connection.
const maxIdleConnsPerHost = 64

// Client returns the HTTP client for URLs a user supplied. For a non-admin it connects only
// to addresses the policy admits, checked on every connection (redirects included), and
// ignores proxy settings of the environment; an admin's client is not restricted.
func (p *Policy) Client(admin bool) *http.Client {
	if admin {
		return p.open
	}
	return p.guarded
}

// CloseIdleConnections closes the connections of both clients that no request is using.
func (p *Policy) CloseIdleConnections() {
	p.open.CloseIdleConnections()
	p.guarded.CloseIdleConnections()
}

// Check returns a *RefusedError when addr is internal and the allow-list admits neither it
// nor host, the name it was resolved from ("" when the address was given as such).
func (p *Policy) Check(host string, addr netip.Addr) error {
	class := Classify(addr)
	if class == Public || p.allowed(host, addr) {
		return nil
	}
	// Resolvers answer IPv4 addresses in their mapped form; they read best as IPv4.
	return &RefusedError{Host: host, Addr: addr.WithZone("").Unmap(), Class: class}
}

func (p *Policy) allowed(host string, addr netip.Addr) bool {
	if host != "" && p.hosts[canonicalHost(host)] {
		return true
	}
	addr = addr.WithZone("").Unmap()
	for _, n := range p.nets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

// CheckURL checks the host of rawURL for a user before it is stored, so the user hears at
// once why it will not be reached: an address is checked as it is, a numeric shorthand of
// one is refused (*ShorthandError), a name is checked by what it resolves to now. A name that does not resolve now passes; the connection is checked
// when it is made, which is what holds. Admins pass.
func (p *Policy) CheckURL(ctx context.Context, rawURL string, admin bool) error {
	if admin {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("the URL has no host")
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.Check("", addr)
	}
	if addr, ok := shorthandIPv4(host); ok {
		e := &ShorthandError{Host: host, Addr: addr}
		if p.Check("", addr) != nil {
			e.Class = Classify(addr)
		}
		return e
	}
	if p.hosts[canonicalHost(host)] {
		return nil
	}
	lookup := p.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil
	}
	for _, addr := range addrs {
		if err := p.Check(host, addr); err != nil {
			return err
		}
	}
	return nil
}

// Admits says whether the administrator's allow-list admits host for the user: a host name
// on it, an address in it, or a name every address of which it admits (resolved now; a name
// that does not resolve is not admitted). Admins are admitted. It decides where a user may
// send a secret over plain http: only to what the administrator allowed, such as a server on
// the local network, never across the internet in clear.
func (p *Policy) Admits(ctx context.Context, host string, admin bool) bool {
	if admin || host != "" && p.hosts[canonicalHost(host)] {
		return true
	}
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return p.allowed("", addr)
	}
	lookup := p.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, addr := range addrs {
		if !p.allowed(host, addr) {
			return false
		}
	}
	return true
}

// RefusedError is an address the policy refuses. Its text names the rule.
type RefusedError struct {
	// Host is the name that resolved to Addr, or "" when Addr was given as such.
	Host  string
	Addr  netip.Addr
	Class Class
}

const refusedWhy = "internal addresses are refused unless the administrator allows them"

func (e *RefusedError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("%s is %s address; %s", e.Addr, article(e.Class), refusedWhy)
	}
	return e.Explain(e.Host)
}

// Explain says why, naming subject as what resolves to the address: "llm_base_url resolves
// to 127.0.0.1, a loopback address; internal addresses are refused unless the administrator
// allows them".
func (e *RefusedError) Explain(subject string) string {
	return fmt.Sprintf("%s resolves to %s, %s address; %s", subject, e.Addr, article(e.Class), refusedWhy)
}

func article(c Class) string {
	if strings.ContainsAny(string(c)[:1], "aeiou") {
		return "an " + string(c)
	}
	return "a " + string(c)
}

// canonicalHost is how host names are compared: lower case, without a final dot.
func canonicalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func isHostName(s string) bool {
	if s == "" || len(s) > 253 || strings.Trim(s, "0123456789.") == "" {
		return false // all digits and dots: an address that does not parse
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}
