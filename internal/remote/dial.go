package remote

import (
	"context"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mcpsag/router/internal/tlsconfig"
)

// DialOptions say how to reach a router.
type DialOptions struct {
	// Token is sent as "authorization: Bearer <token>" with every call,
	// when set.
	Token string
	// TLS connects with TLS when it names a CA or a client certificate;
	// otherwise the connection is plain (a router on loopback).
	TLS tlsconfig.Client
	// Extra are more options, appended last (backoff, interceptors).
	Extra []grpc.DialOption
	// OnHandshake, when set, is told how each connection's handshake
	// ended (TLS, or the no-op of a plain connection) once a TCP
	// connection is up: nil, or the error, such as a certificate that
	// did not verify.
	OnHandshake func(error)
}

// Dial returns a client connection to the router at addr. It does not wait
// for the router: calls made before it is up fail with Unavailable.
func Dial(addr string, o DialOptions) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if o.TLS.Enabled() {
		tc, err := o.TLS.Config()
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		creds = credentials.NewTLS(tc)
	}
	if o.OnHandshake != nil {
		creds = observedCreds{creds, o.OnHandshake}
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(o.Token)))
	}
	opts = append(opts, o.Extra...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return conn, nil
}

// CheckAddr accepts a router address for Dial: host:port, or a gRPC target
// with a scheme (dns:///host:port, unix:///path). It refuses a host without
// a port, which gRPC would dial on port 443: bare, or in a target of the
// dns, ipv4 or ipv6 scheme, whose resolvers default to 443 too.
func CheckAddr(addr string) error {
	scheme, rest, _ := strings.Cut(addr, ":")
	if strings.Contains(addr, ":/") && scheme != "" && !strings.ContainsAny(scheme, "[].") || targetSchemes[scheme] {
		return checkTarget(addr, scheme, rest)
	}
	return checkHostPort(addr, addr, "127.0.0.1:7443")
}

// targetSchemes are grpc-go's schemes whose targets may be written
// without slashes (dns:host:port, unix:path), which would otherwise read
// as host:port.
var targetSchemes = map[string]bool{"dns": true, "ipv4": true, "ipv6": true, "unix": true, "unix-abstract": true, "passthrough": true}

// checkTarget checks the endpoints of a gRPC target whose resolver would
// give a host without a port 443: dns:[//authority/]host:port,
// ipv4:addr:port[,addr:port...], ipv6:[addr]:port[,...]. Other schemes
// (unix, passthrough, ...) pass as they are.
func checkTarget(addr, scheme, rest string) error {
	switch scheme {
	case "dns":
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			_, rest, _ = strings.Cut(after, "/")
		}
		return checkHostPort(addr, rest, "dns:///localhost:7443")
	case "ipv4", "ipv6":
		example := "ipv4:127.0.0.1:7443"
		if scheme == "ipv6" {
			example = "ipv6:[::1]:7443"
		}
		for ep := range strings.SplitSeq(rest, ",") {
			if err := checkHostPort(addr, ep, example); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHostPort checks that endpoint, part of addr, is host:port.
func checkHostPort(addr, endpoint, example string) error {
	_, port, err := net.SplitHostPort(endpoint)
	switch {
	case err != nil && strings.Contains(err.Error(), "missing port"), err == nil && port == "":
		return fmt.Errorf("%q has no port (gRPC would dial port 443); want host:port such as %s", addr, example)
	case err != nil:
		return fmt.Errorf("%q: want host:port such as %s", addr, example)
	}
	return nil
}

// bearerToken sends a token with every call. It does not require TLS, so it
// works against a router on loopback; the router itself refuses to accept
// tokens in clear text on other addresses.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }

// observedCreds reports the outcome of every client handshake.
type observedCreds struct {
	credentials.TransportCredentials
	report func(error)
}

func (c observedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	c.report(err)
	return conn, info, err
}

func (c observedCreds) Clone() credentials.TransportCredentials {
	return observedCreds{c.TransportCredentials.Clone(), c.report}
}
