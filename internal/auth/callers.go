package auth

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc/peer"
)

// Caller is whom a failed authentication is counted against.
type Caller struct {
	// Key names the caller in the failure limiter's table.
	Key string
	// Local is set for a caller on the router's own host: a client of the
	// state folder's Unix socket, or one connected over loopback. Local
	// callers each have a budget of their own and are neither counted in
	// nor refused by the router-wide limit.
	Local bool
}

// CallerOf says whom a failure of the call in ctx is counted against,
// from the address of its peer (grpc's, or one an HTTP front put in ctx):
//
//   - a client of a Unix socket listener made by PeerCredentials: its
//     process, as the kernel names it (SO_PEERCRED), local. A process
//     that reconnects keeps its budget; another process has its own;
//   - a client connected over loopback (127.0.0.0/8, ::1): its
//     connection, local. Every local client shares the address, so a
//     budget per address would let one client with wrong tokens lock out
//     the others; a client that reconnects starts a new budget;
//   - a client a trusted proxy forwarded the call for (Forwarded, put in
//     the peer by Proxies.Tap or an HTTP front): its IP address, as any
//     other;
//   - any other: its IP address without the port, an IPv6 address as its
//     /64 prefix (one host commonly holds a whole /64).
//
// A proxy in front of the router that is not trusted (Proxies) is the peer
// of every call it forwards: a proxy on another host makes its clients
// share one budget, one on the same host makes each of its connections a
// local caller.
func CallerOf(ctx context.Context) Caller {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return Caller{Key: "unknown"}
	}
	return callerOfAddr(p.Addr)
}

func callerOfAddr(addr net.Addr) Caller {
	switch a := addr.(type) {
	case UnixPeer:
		return Caller{Key: a.String(), Local: true}
	case *net.UnixAddr:
		return Caller{Key: "unix:" + a.Name, Local: true}
	case Forwarded:
		return remoteCaller(net.IP(a.Client.AsSlice()))
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return Caller{Key: host}
	case ip.IsLoopback():
		return Caller{Key: addr.String(), Local: true}
	}
	return remoteCaller(ip)
}

// remoteCaller is a caller on another host, by IP address: an IPv4 address,
// or an IPv6 address's /64.
func remoteCaller(ip net.IP) Caller {
	if ip.To4() != nil {
		return Caller{Key: ip.To4().String()}
	}
	return Caller{Key: ip.Mask(net.CIDRMask(64, 128)).String() + "/64"}
}

// UnixPeer is the address of a client of a Unix socket listener made by
// PeerCredentials: the process that connected, as the kernel reported it
// when the connection was accepted.
type UnixPeer struct {
	PID, UID, GID int
}

// Network is "unix".
func (UnixPeer) Network() string { return "unix" }

// String names the process: unix:pid=PID,uid=UID.
func (p UnixPeer) String() string { return fmt.Sprintf("unix:pid=%d,uid=%d", p.PID, p.UID) }

// peerConn is a connection whose remote address is the process that made
// it.
type peerConn struct {
	net.Conn
	peer UnixPeer
}

func (c peerConn) RemoteAddr() net.Addr { return c.peer }

// peerListener is a Unix socket listener whose connections name their
// peer's process.
type peerListener struct{ net.Listener }

// PeerCredentials wraps a Unix socket listener so that each connection's
// remote address is the UnixPeer that made it (the kernel's SO_PEERCRED,
// which a client cannot forge), which CallerOf counts failures against. A
// connection whose credentials cannot be read keeps its own address, and
// shares the budget of every such client.
func PeerCredentials(l net.Listener) net.Listener { return peerListener{l} }

func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	if p, ok := peerOf(c); ok {
		return peerConn{Conn: c, peer: p}, nil
	}
	return c, nil
}
