package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ShorthandError is a host written as an IPv4 address in one of the shorthands that C's
// inet_aton reads and Go's resolver does not: fewer than four parts ("127.1"), one number
// ("2130706433"), hexadecimal or octal parts ("0x7f000001", "0177.0.0.1"), or a final dot.
// Some clients and resolvers take such a host for the address, others for a name, so a URL
// that names one is refused, whatever the address: checked as a name, it would pass the
// policy that its address fails.
type ShorthandError struct {
	Host string
	Addr netip.Addr
	// Class is the rule that refuses Addr, or Public when the policy admits it.
	Class Class
}

func (e *ShorthandError) Error() string {
	if e.Class != Public {
		return fmt.Sprintf("%s is a shorthand of %s, %s address; internal addresses are refused unless the administrator allows them",
			e.Host, e.Addr, article(e.Class))
	}
	return fmt.Sprintf("%s is a shorthand of the address %s, which programs read differently; numeric hosts are taken only as four decimal numbers (%s)",
		e.Host, e.Addr, e.Addr)
}

// shorthandIPv4 reads host as inet_aton does, and reports whether it is an IPv4 address in
// a form netip.ParseAddr refuses: one to four parts separated by dots, each decimal, octal
// (a leading 0) or hexadecimal (0x), the last filling the bytes the others leave. A final
// dot is allowed, as resolvers allow it on names.
func shorthandIPv4(host string) (netip.Addr, bool) {
	s := strings.TrimSuffix(host, ".")
	if s == "" || strings.Trim(s, "0123456789abcdefABCDEFxX.") != "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// Every part but the last is one byte; the last fills the rest.
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n = n<<8 | v
	}
	rest := 8 * uint(5-len(vals))
	last := vals[len(vals)-1]
	if last >= 1<<rest {
		return netip.Addr{}, false
	}
	n = n<<rest | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// parseAtonPart reads one part: 0x… hexadecimal, 0… octal, else decimal.
func parseAtonPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	v, err := strconv.ParseUint(p, base, 32)
	return v, err == nil
}
