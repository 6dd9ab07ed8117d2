package remote

import (
	"context"
	"fmt"

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

// bearerToken sends a token with every call. It does not require TLS, so it
// works against a router on loopback; the router itself refuses to accept
// tokens in clear text on other addresses.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }
