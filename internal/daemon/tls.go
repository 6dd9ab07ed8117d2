package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/config"
)

// serverTLS builds the listener's TLS configuration: TLS 1.3, the key pair
// re-read when its files change (certificate rotation without a restart), and
// with a client CA file, mutual TLS.
func serverTLS(c config.TLS) (*tls.Config, error) {
	kp := &keyPair{certFile: c.CertFile, keyFile: c.KeyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return kp.get()
		},
	}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls client CA %s: no PEM certificates found", c.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// keyPair serves a certificate and reloads it when either file changes. A
// failed reload keeps the previous certificate.
type keyPair struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cert != nil && time.Since(k.checked) < time.Second {
		return k.cert, nil
	}
	k.checked = time.Now()
	stamp := fileStamp(k.certFile) + "|" + fileStamp(k.keyFile)
	if k.cert != nil && stamp == k.stamp {
		return k.cert, nil
	}
	c, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("tls key pair: %w", err)
	}
	k.cert, k.stamp = &c, stamp
	return k.cert, nil
}

func fileStamp(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", fi.Size(), fi.ModTime().UnixNano())
}
