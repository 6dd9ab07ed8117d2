package auth

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/tap"
)

// Proxies are the proxies trusted to say which client they forward a call
// for (the trusted_proxies setting): their addresses, or networks of them.
// The zero value trusts none.
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies reads trusted proxies: each an IP address (10.0.0.5, ::1)
// or a network in CIDR notation (10.0.0.0/8, fd00::/8).
func ParseProxies(list []string) (Proxies, error) {
	var p Proxies
	for i, s := range list {
		s = strings.TrimSpace(s)
		if pfx, err := netip.ParsePrefix(s); err == nil {
			p.prefixes = append(p.prefixes, pfx.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return Proxies{}, fmt.Errorf("trusted_proxies[%d]: %q is no IP address or CIDR network, such as 127.0.0.1 or 10.0.0.0/8", i, s)
		}
		a = a.Unmap()
		p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
	}
	return p, nil
}

// Empty reports whether no proxy is trusted.
func (p Proxies) Empty() bool { return len(p.prefixes) == 0 }

// trusts reports whether a is a trusted proxy's address.
func (p Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	return slices.ContainsFunc(p.prefixes, func(pfx netip.Prefix) bool { return pfx.Contains(a) })
}

// Forwarded is the address of a client a trusted proxy forwarded a call
// for. CallerOf counts its failures against its IP address (an IPv6
// address as its /64), as a remote caller's, whatever proxy and connection
// brought it.
type Forwarded struct {
	Client netip.Addr
	// Proxy is the address of the proxy that connected to the router.
	Proxy net.Addr
}

// Network is "tcp".
func (Forwarded) Network() string { return "tcp" }

// String is the client's IP address.
func (f Forwarded) String() string { return f.Client.String() }

// Client says where a call came from, given its connection's remote
// address and header, which returns the values of a request header (gRPC
// metadata or HTTP). It is the one owner of "who is the caller" behind a
// proxy: when addr is a trusted proxy's, the call came from the client the
// proxy forwards it for, read from X-Forwarded-For from the right (the
// entry the proxy added last) past every trusted proxy, or else from
// X-Real-IP; from anyone else, or without a usable header, it came from
// addr, and the headers are ignored.
func (p Proxies) Client(addr net.Addr, header func(string) []string) net.Addr {
	if p.Empty() || addr == nil {
		return addr
	}
	from, ok := ipOf(addr)
	if !ok || !p.trusts(from) {
		return addr
	}
	if c, ok := p.forwardedFor(header("x-forwarded-for")); ok {
		return Forwarded{Client: c, Proxy: addr}
	}
	if real := header("x-real-ip"); len(real) == 1 {
		if c, ok := parseHop(real[0]); ok {
			return Forwarded{Client: c, Proxy: addr}
		}
	}
	return addr
}

// forwardedFor reads X-Forwarded-For ("client, proxy1, proxy2", over one or
// more header lines) from the right: the first address that is not a
// trusted proxy is the client; when all are trusted, the leftmost is. An
// entry that is no address ends the walk at the last one read.
func (p Proxies) forwardedFor(values []string) (netip.Addr, bool) {
	var hops []string
	for _, v := range values {
		for h := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	var last netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		last = a
		if !p.trusts(a) {
			return a, true
		}
	}
	return last, last.IsValid()
}

// parseHop reads one hop of a forwarding header: an IP address, with or
// without a port ("203.0.113.7", "203.0.113.7:51234", "[2001:db8::1]:443").
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// ipOf returns the IP address of a TCP peer.
func ipOf(addr net.Addr) (netip.Addr, bool) {
	if t, ok := addr.(*net.TCPAddr); ok {
		a, ok := netip.AddrFromSlice(t.IP)
		return a.Unmap(), ok
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// Tap is a gRPC server's tap handle (grpc.InTapHandle): before anything
// reads a call's peer (authentication, the failure limiter, the audit,
// telemetry's client address), it replaces the peer's address with the
// client a trusted proxy forwards the call for (Client, from the
// metadata's x-forwarded-for or x-real-ip).
func (p Proxies) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	pr, ok := peer.FromContext(ctx)
	if !ok || pr.Addr == nil {
		return ctx, nil
	}
	addr := p.Client(pr.Addr, info.Header.Get)
	if addr == pr.Addr {
		return ctx, nil
	}
	fwd := *pr
	fwd.Addr = addr
	return peer.NewContext(ctx, &fwd), nil
}
