// Package tlsconfig builds the TLS configurations of the router's listeners
// and of its clients (routerctl, the MCP front in attached mode) from PEM
// files: a server key pair re-read when its files change, so certificates
// rotate without a restart; a client CA for mutual TLS; and client
// configurations with a CA and an optional client certificate.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/filestamp"
)

// Server returns a listener's configuration: TLS 1.3, the key pair of
// certFile and keyFile (re-read when they change), and, with clientCAFile,
// mutual TLS that requires a client certificate signed by that CA.
func Server(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	kp := newKeyPair(certFile, keyFile)
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return kp.get()
		},
	}
	if clientCAFile != "" {
		pool, err := CertPool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls client CA: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Client describes a client's TLS settings.
type Client struct {
	// CA is the file of the CA certificates to trust; empty trusts the
	// system's.
	CA string
	// Cert and Key are the client certificate for mutual TLS; both or
	// neither.
	Cert, Key string
	// ServerName is the name expected in the server's certificate; empty
	// means the host being dialled.
	ServerName string
}

// Enabled reports whether the client connects with TLS at all.
func (c Client) Enabled() bool { return c.CA != "" || c.Cert != "" }

// Config returns the client's configuration.
func (c Client) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CA != "" {
		pool, err := CertPool(c.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, fmt.Errorf("a client certificate needs both its certificate and its key file")
	}
	if c.Cert != "" {
		kp, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}

// CertPool reads the PEM certificates of file into a pool.
func CertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates found", file)
	}
	return pool, nil
}

// keyPair serves a certificate and reloads it when either file changes
// (checked at most once a second). A failed reload keeps the previous
// certificate.
type keyPair struct {
	certFile, keyFile string
	files             filestamp.Watch

	mu   sync.Mutex
	cert *tls.Certificate
}

func newKeyPair(certFile, keyFile string) *keyPair {
	return &keyPair{certFile: certFile, keyFile: keyFile,
		files: filestamp.Watch{Paths: []string{certFile, keyFile}, Interval: time.Second}}
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cert != nil && !k.files.Changed() {
		return k.cert, nil
	}
	if k.cert == nil {
		k.files.Mark() // the files as this load reads them
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("tls key pair: %w", err)
	}
	k.cert = &c
	return k.cert, nil
}
