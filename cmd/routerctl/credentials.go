package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// bearerToken sends a token with every call. It does not require TLS, so it
// works against a router on loopback; the router refuses tokens in clear
// text on other addresses.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }

// tlsFlags are the client TLS options.
type tlsFlags struct {
	ca, cert, key, serverName string
}

func (f tlsFlags) enabled() bool { return f.ca != "" || f.cert != "" }

func (f tlsFlags) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificates found", f.ca)
		}
		cfg.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, usageError{"--tls-cert and --tls-key go together"}
	}
	if f.cert != "" {
		c, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
