package netpolicy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// DialContext connects as net.Dialer does, but checks every address it is about to connect
// to, after name resolution, and refuses those the policy refuses with a *RefusedError.
// Checking the socket's own address means that a name which resolved to a public address
// when CheckURL looked at it gains nothing by resolving to an internal one now.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		host = "" // the address itself, not a name
	}
	d := net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("connect to %s: not an IP address", address)
			}
			return p.Check(host, ap.Addr())
		},
	}
	return d.DialContext(ctx, network, address)
}
