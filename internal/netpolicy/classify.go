package netpolicy

import "net/netip"

// Class is why an address is internal: the rule that refuses it. Public is the empty Class.
type Class string

// The classes of internal addresses. Their text names the rule in refusals ("127.0.0.1, a
// loopback address").
const (
	Public      Class = ""
	Unspecified Class = "unspecified"
	Loopback    Class = "loopback"
	Private     Class = "private"
	LinkLocal   Class = "link-local"
	Metadata    Class = "cloud metadata"
	SharedNAT   Class = "carrier-grade NAT"
	Multicast   Class = "multicast"
	Reserved    Class = "reserved"
)

// rule classifies one range of addresses. embedded is where an IPv6 range holds an IPv4
// address that it reaches: such an address is judged by its IPv4 address too, so that an
// internal one cannot be spelt as IPv6.
type rule struct {
	prefix   netip.Prefix
	class    Class
	embedded int // byte offset of the embedded IPv4 address; zero when none
}

func r(prefix string, c Class) rule { return rule{prefix: netip.MustParsePrefix(prefix), class: c} }

func embeds(prefix string, c Class, at int) rule {
	return rule{prefix: netip.MustParsePrefix(prefix), class: c, embedded: at}
}

// rules are tried in order; the first that holds the address decides. Narrow ranges come
// before the wide ones that contain them (metadata addresses inside link-local and ULA).
// They follow IANA's special-purpose address registries.
var rules = []rule{
	// Cloud instance metadata and host services: they hand out credentials.
	r("169.254.169.254/32", Metadata), // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
	r("169.254.170.2/32", Metadata),   // AWS ECS task credentials
	r("169.254.170.23/32", Metadata),  // AWS EKS pod identity
	r("100.100.100.200/32", Metadata), // Alibaba Cloud
	r("168.63.129.16/32", Metadata),   // Azure's host endpoint, in public space
	r("fd00:ec2::254/128", Metadata),  // AWS over IPv6
	r("fd00:ec2::23/128", Metadata),   // AWS EKS pod identity over IPv6

	// IPv4.
	r("0.0.0.0/8", Unspecified), // "this network": 0.0.0.0 reaches the local host
	r("10.0.0.0/8", Private),
	r("100.64.0.0/10", SharedNAT),
	r("127.0.0.0/8", Loopback),
	r("169.254.0.0/16", LinkLocal),
	r("172.16.0.0/12", Private),
	r("192.0.0.0/24", Reserved),   // IETF protocol assignments
	r("192.0.2.0/24", Reserved),   // documentation
	r("192.88.99.0/24", Reserved), // former 6to4 relays
	r("192.168.0.0/16", Private),
	r("198.18.0.0/15", Reserved),   // benchmarking
	r("198.51.100.0/24", Reserved), // documentation
	r("203.0.113.0/24", Reserved),  // documentation
	r("224.0.0.0/4", Multicast),
	r("240.0.0.0/4", Reserved), // future use, and the broadcast address

	// IPv6.
	r("::/128", Unspecified),
	r("::1/128", Loopback),
	embeds("::/96", Reserved, 12),      // IPv4-compatible (deprecated)
	embeds("64:ff9b::/96", Public, 12), // NAT64 to IPv4
	r("64:ff9b:1::/48", Private),       // local-use NAT64
	r("100::/64", Reserved),            // discard
	r("2001:db8::/32", Reserved),       // documentation
	embeds("2002::/16", Public, 2),     // 6to4
	r("fc00::/7", Private),             // unique local (ULA)
	r("fe80::/10", LinkLocal),
	r("fec0::/10", Private), // site-local (deprecated)
	r("ff00::/8", Multicast),
}

// Classify says whether addr is internal, and why. An IPv4-mapped IPv6 address is its IPv4
// address; one that embeds an IPv4 address (IPv4-compatible, NAT64, 6to4) is internal when
// that address is; a zone is ignored.
func Classify(addr netip.Addr) Class {
	if !addr.IsValid() {
		return Unspecified
	}
	addr = addr.WithZone("").Unmap()
	for _, rl := range rules {
		if !rl.prefix.Contains(addr) {
			continue
		}
		if rl.embedded != 0 {
			b := addr.As16()
			v4 := netip.AddrFrom4([4]byte(b[rl.embedded : rl.embedded+4]))
			if c := Classify(v4); c != Public {
				return c
			}
		}
		return rl.class
	}
	return Public
}
