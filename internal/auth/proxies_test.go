package auth

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/tap"
)

func tcp(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

// TestProxiesClient: the client a trusted proxy forwards for is read from
// X-Forwarded-For from the right, past trusted proxies, or X-Real-IP; the
// headers of anyone else, and headers that name no address, are ignored.
func TestProxiesClient(t *testing.T) {
	proxies, err := ParseProxies([]string{"127.0.0.1", "10.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		proxies Proxies
		peer    string
		headers map[string][]string
		want    string
	}{
		{"no proxy trusted", Proxies{}, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"203.0.113.7"}}, "127.0.0.1:5000"},
		{"a trusted proxy", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"203.0.113.7"}}, "203.0.113.7"},
		{"anyone else", proxies, "198.51.100.9:5000", map[string][]string{"x-forwarded-for": {"203.0.113.7"}, "x-real-ip": {"203.0.113.8"}}, "198.51.100.9:5000"},
		{"a forged first hop", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"6.6.6.6, 203.0.113.7"}}, "203.0.113.7"},
		{"past trusted hops", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"6.6.6.6, 203.0.113.7", "10.1.2.3"}}, "203.0.113.7"},
		{"all hops trusted", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"10.0.0.1, 10.0.0.2"}}, "10.0.0.1"},
		{"X-Real-IP", proxies, "10.0.0.5:5000", map[string][]string{"x-real-ip": {"203.0.113.7"}}, "203.0.113.7"},
		{"no header", proxies, "127.0.0.1:5000", nil, "127.0.0.1:5000"},
		{"no address", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"unknown"}, "x-real-ip": {"nonsense"}}, "127.0.0.1:5000"},
		{"no address after a client", proxies, "127.0.0.1:5000", map[string][]string{"x-forwarded-for": {"203.0.113.7, _hidden"}}, "127.0.0.1:5000"},
		{"hops with ports", proxies, "[::1]:5000", map[string][]string{"x-forwarded-for": {"[2001:db8::7]:443"}}, "2001:db8::7"},
		{"IPv4 in IPv6", proxies, "[::ffff:127.0.0.1]:5000", map[string][]string{"x-forwarded-for": {"::ffff:203.0.113.7"}}, "203.0.113.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.proxies.Client(tcp(tc.peer), func(k string) []string { return tc.headers[k] })
			if got.String() != tc.want {
				t.Errorf("Client = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestForwardedCallers: a forwarded client is counted against its own
// address as a remote caller, whatever proxy connection brought it, even
// when the proxy reaches the router over loopback.
func TestForwardedCallers(t *testing.T) {
	proxies, _ := ParseProxies([]string{"127.0.0.1"})
	for _, tc := range []struct{ peer, xff, key string }{
		{"127.0.0.1:5000", "203.0.113.7", "203.0.113.7"},
		{"127.0.0.1:5001", "203.0.113.7", "203.0.113.7"},
		{"127.0.0.1:5002", "2001:db8:1:2:3::9", "2001:db8:1:2::/64"},
	} {
		md := metadata.MD{"x-forwarded-for": {tc.xff}}
		ctx, err := proxies.Tap(peer.NewContext(context.Background(), &peer.Peer{Addr: tcp(tc.peer)}), &tap.Info{Header: md})
		if err != nil {
			t.Fatal(err)
		}
		if c := CallerOf(ctx); c.Key != tc.key || c.Local {
			t.Errorf("%s for %s: caller %+v, want %s, remote", tc.peer, tc.xff, c, tc.key)
		}
		if got := PeerAddr(ctx); got != tc.xff {
			t.Errorf("%s for %s: PeerAddr = %s, want the client's address", tc.peer, tc.xff, got)
		}
	}
	// The proxy's own calls, without a header, stay its own.
	ctx, _ := proxies.Tap(peer.NewContext(context.Background(), &peer.Peer{Addr: tcp("127.0.0.1:5003")}), &tap.Info{})
	if c := CallerOf(ctx); c.Key != "127.0.0.1:5003" || !c.Local {
		t.Errorf("the proxy's own connection: %+v", c)
	}
}

func TestParseProxies(t *testing.T) {
	if _, err := ParseProxies([]string{"127.0.0.1", " 10.0.0.0/8 ", "::1", "fd00::/8"}); err != nil {
		t.Errorf("ParseProxies: %v", err)
	}
	for _, bad := range []string{"localhost", "10.0.0.0/33", "fe80::1%eth0", ""} {
		if _, err := ParseProxies([]string{"127.0.0.1", bad}); err == nil || !strings.Contains(err.Error(), "trusted_proxies[1]") {
			t.Errorf("ParseProxies(%q) = %v, want an error naming trusted_proxies[1]", bad, err)
		}
	}
}
