// Package publicaddr says whether an IP address is a public unicast address: the only kind a
// connection on someone else's behalf may reach (the backend's notification requests, a hosted
// kube-apiserver's egress in the HyperShift simulator). Everything else (loopback, private,
// link-local, CGNAT, multicast, reserved ranges, and IPv6 forms that embed an IPv4 address) is
// a way into the region's own network.
package publicaddr

import "net/netip"

// refusedPrefixes are ranges that are not public besides what netip classifies as loopback,
// private, link-local, multicast or unspecified. Addresses are unmapped first, so ::ffff:10.0.0.1
// is 10.0.0.1.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated): embeds an IPv4 address
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: embeds an IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds an IPv4 address
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Rule names why addr is not a public unicast address ("loopback", "private", "reserved range
// 100.64.0.0/10", …), or returns "" if it is one. addr is unmapped and its zone dropped first.
func Rule(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	switch {
	case !addr.IsValid():
		return "not an IP address"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "link-local"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	case addr.IsUnspecified():
		return "unspecified"
	}
	for _, pfx := range refusedPrefixes {
		if pfx.Contains(addr) {
			return "reserved range " + pfx.String()
		}
	}
	return ""
}
