package config

import (
	"errors"
	"fmt"
	"net"

	"github.com/mcpsag/router/internal/auth"
)

// validateListeners checks auth, TLS, the MCP listener and the trusted
// proxies: tokens never cross the network in clear text.
func (c *Config) validateListeners() []error {
	var errs []error
	if c.Auth.Enabled && c.Auth.TokensFile == "" {
		errs = append(errs, errors.New("auth: enabled but tokens_file is empty"))
	}
	if _, err := auth.ParseProxies(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: set both cert_file and key_file"))
	}
	if c.TLS.ClientCAFile != "" && !c.TLS.Enabled() {
		errs = append(errs, errors.New("tls: client_ca_file (mutual TLS) needs cert_file and key_file"))
	}
	if c.Auth.Enabled && !c.TLS.Enabled() && !isLoopback(c.Addr) {
		errs = append(errs, fmt.Errorf("auth: tokens would cross the network in clear text on %s; configure tls or listen on a loopback address", c.Addr))
	}
	if c.MCP.Addr != "" {
		if _, _, err := net.SplitHostPort(c.MCP.Addr); err != nil {
			errs = append(errs, fmt.Errorf("mcp.addr %q: want host:port such as 127.0.0.1:7444", c.MCP.Addr))
		}
		if c.Auth.Enabled && !c.TLS.Enabled() && !isLoopback(c.MCP.Addr) {
			errs = append(errs, fmt.Errorf("mcp.addr: tokens would cross the network in clear text on %s; configure tls or listen on a loopback address", c.MCP.Addr))
		}
	}
	return errs
}

// isLoopback reports whether a listen address only accepts local clients.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
