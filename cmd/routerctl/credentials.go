package main

import (
	"context"
)

// bearerToken sends a token with every call. It does not require TLS, so it
// works against a router on loopback; the router refuses tokens in clear
// text on other addresses.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }
