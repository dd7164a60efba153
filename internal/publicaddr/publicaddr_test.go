package publicaddr

import (
	"net/netip"
	"testing"
)

func TestRule(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"192.168.0.1", "private"},
		{"fd00::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"224.0.0.1", "link-local"}, // link-local multicast
		{"239.1.1.1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"100.64.0.1", "reserved range 100.64.0.0/10"},
		{"64:ff9b::a00:1", "reserved range 64:ff9b::/96"},
		{"2002:a00:1::", "reserved range 2002::/16"},
		{"255.255.255.255", "reserved range 240.0.0.0/4"},
		{"1.1.1.1", ""},
		{"::ffff:1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := Rule(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Fatalf("Rule(%s) = %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
	if got := Rule(netip.Addr{}); got != "not an IP address" {
		t.Fatalf("Rule(zero) = %q", got)
	}
}
