package netpolicy

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want Class
	}{
		{"0.0.0.0", Unspecified},
		{"0.1.2.3", Unspecified},
		{"::", Unspecified},
		{"127.0.0.1", Loopback},
		{"127.255.0.9", Loopback},
		{"::1", Loopback},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"192.168.1.1", Private},
		{"fd12:3456::1", Private},
		{"fc00::1", Private},
		{"fec0::1", Private},
		{"64:ff9b:1::a00:1", Private},
		{"169.254.1.1", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"169.254.169.254", Metadata},
		{"169.254.170.2", Metadata},
		{"100.100.100.200", Metadata},
		{"168.63.129.16", Metadata},
		{"fd00:ec2::254", Metadata},
		{"100.64.0.1", SharedNAT},
		{"100.127.255.254", SharedNAT},
		{"224.0.0.1", Multicast},
		{"239.255.255.250", Multicast},
		{"ff02::1", Multicast},
		{"255.255.255.255", Reserved},
		{"240.0.0.1", Reserved},
		{"192.0.2.1", Reserved},
		{"198.18.0.1", Reserved},
		{"192.0.0.192", Reserved},
		{"2001:db8::1", Reserved},
		{"100::1", Reserved},
		// IPv6 spellings of IPv4 addresses are judged by the IPv4 address.
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:169.254.169.254", Metadata},
		{"::ffff:10.0.0.1", Private},
		{"::ffff:8.8.8.8", Public},
		{"::127.0.0.1", Loopback},
		{"::8.8.8.8", Reserved},
		{"64:ff9b::127.0.0.1", Loopback},
		{"64:ff9b::a9fe:a9fe", Metadata},
		{"64:ff9b::8.8.8.8", Public},
		{"2002:7f00:1::1", Loopback},
		{"2002:a9fe:a9fe::1", Metadata},
		{"2002:808:808::1", Public},
		// Public addresses, also next to internal ranges.
		{"8.8.8.8", Public},
		{"1.1.1.1", Public},
		{"100.63.255.255", Public},
		{"100.128.0.0", Public},
		{"172.15.255.255", Public},
		{"172.32.0.0", Public},
		{"169.253.255.255", Public},
		{"2606:4700:4700::1111", Public},
		{"2001:4860:4860::8888", Public},
	} {
		if got := Classify(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Classify(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := Classify(netip.Addr{}); got != Unspecified {
		t.Errorf("Classify(invalid) = %q, want unspecified", got)
	}
}
