package netpolicy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// loopbackServer is an internal service on 127.0.0.1 that counts the requests reaching it.
func loopbackServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func secret(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "internal secret") }

// get fetches url with the client, returning the body.
func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// refused fails the test unless err is a refusal of addr (from host) and nothing was sent.
func refused(t *testing.T, err error, host string, hits *atomic.Int64) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) || re.Host != host || re.Class != Loopback {
		t.Fatalf("err %v, want a loopback refusal for host %q", err, host)
	}
	if !strings.Contains(err.Error(), "a loopback address; internal addresses are refused unless the administrator allows them") {
		t.Fatalf("err %q does not name the rule", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the internal server got %d requests", n)
	}
}

func TestClientRefusesInternalAddresses(t *testing.T) {
	srv, hits := loopbackServer(t, secret)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(false)
	t.Run("an address", func(t *testing.T) {
		_, err := get(t, c, srv.URL)
		refused(t, err, "", hits)
	})
	t.Run("a name that resolves to loopback when connecting", func(t *testing.T) {
		// CheckURL saw a public answer; the name resolves to loopback when the client
		// connects, as when DNS changes its answer between the two.
		p.lookup = func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		u := "http://localhost:" + strconv.Itoa(port) + "/"
		if err := p.CheckURL(t.Context(), u, false); err != nil {
			t.Fatalf("CheckURL with a public answer: %v", err)
		}
		_, err := get(t, c, u)
		refused(t, err, "localhost", hits)
	})
	t.Run("an admin's client is not restricted", func(t *testing.T) {
		body, err := get(t, p.Client(true), srv.URL)
		if err != nil || body != "internal secret" {
			t.Fatalf("admin: %q, %v", body, err)
		}
	})
}

func TestClientAllowList(t *testing.T) {
	srv, _ := loopbackServer(t, secret)
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	t.Run("a prefix", func(t *testing.T) {
		p, err := New([]string{"127.0.0.0/8"})
		if err != nil {
			t.Fatal(err)
		}
		if body, err := get(t, p.Client(false), srv.URL); err != nil || body != "internal secret" {
			t.Fatalf("allowed prefix: %q, %v", body, err)
		}
	})
	t.Run("a name, and a redirect away from it", func(t *testing.T) {
		p, err := New([]string{"localhost"})
		if err != nil {
			t.Fatal(err)
		}
		redirect, hits := loopbackServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, srv.URL, http.StatusFound)
		})
		u, _ := url.Parse(redirect.URL)
		if body, err := get(t, p.Client(false), "http://localhost:"+port+"/"); err != nil || body != "internal secret" {
			t.Fatalf("allowed name: %q, %v", body, err)
		}
		// localhost is allowed, 127.0.0.1 named as such is not: the redirect's connection is
		// checked as every other.
		_, err = get(t, p.Client(false), "http://localhost:"+u.Port()+"/")
		var re *RefusedError
		if !errors.As(err, &re) || re.Host != "" || re.Addr != netip.MustParseAddr("127.0.0.1") {
			t.Fatalf("redirect to 127.0.0.1: %v, want a refusal", err)
		}
		if hits.Load() != 1 {
			t.Fatalf("the redirecting server got %d requests, want 1", hits.Load())
		}
	})
}

func TestClientIgnoresEnvironmentProxies(t *testing.T) {
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy would be the only address the dialer sees.
	if tr, ok := p.Client(false).Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Fatal("the guarded client uses a proxy")
	}
}

// Many conversations may call one user's model server at once: both clients keep more idle
// connections per host than Go's default two.
func TestClientsKeepIdleConnections(t *testing.T) {
	p, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, admin := range []bool{false, true} {
		tr, ok := p.Client(admin).Transport.(*http.Transport)
		if !ok || tr.MaxIdleConnsPerHost != maxIdleConnsPerHost {
			t.Fatalf("admin %v: the client keeps %d idle connections per host", admin, tr.MaxIdleConnsPerHost)
		}
	}
}
