package reliability

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// TestLocalClientCyclingWrongTokens: a client on 127.0.0.1 cycles five
// wrong tokens, and a client on the state folder's Unix socket does the
// same, 20 rounds each. After every round, routerctl status with the valid
// admin token, over loopback and over the socket, must be served: the five
// tokens spent 127.0.0.1's budget, and every local client, the valid admin
// token included, was refused with ResourceExhausted. The cycling clients
// are told each time that their token is wrong (their repeats guess
// nothing), while a guesser presenting new tokens, over loopback or the
// socket, is limited after 10; a remote guesser still is too
// (TestRemoteGuesserIsLimited).
func TestLocalClientCyclingWrongTokens(t *testing.T) {
	const good = "the-admin-token-5d2a"
	ws := newWorkspace(t, 20, 61)
	o := routerOpts{Workspace: ws.Dir, StateDir: shortTempDir(t)}
	r := startWithAuthOpts(t, ws, good, o)
	defer r.Stop()
	sock := "unix://" + filepath.Join(o.StateDir, "router.sock")
	conns := map[string]*grpc.ClientConn{"loopback": dialFrom(t, r.Addr, "127.0.0.1")}
	sc, err := grpc.NewClient(sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	conns["socket"] = sc
	try := func(conn *grpc.ClientConn, tok string) codes.Code {
		ctx := metadata.AppendToOutgoingContext(ctxT(t, 10*time.Second), "authorization", "Bearer "+tok)
		_, err := pb.NewSkillRouterClient(conn).ListSkills(ctx, &pb.ListSkillsRequest{})
		return status.Code(err)
	}
	cycled := map[string]map[codes.Code]int{}
	served := 0
	for round := range 20 {
		for via, conn := range conns {
			if cycled[via] == nil {
				cycled[via] = map[codes.Code]int{}
			}
			for i := range 5 {
				cycled[via][try(conn, fmt.Sprintf("stale-token-%d", i))]++
			}
		}
		for _, addr := range []string{r.Addr, sock} {
			out, err := exec.Command(builtBinary(t, "routerctl"), "--addr", addr, "--token", good, "status").CombinedOutput()
			if err != nil {
				t.Fatalf("round %d: routerctl status with the valid token over %s: %v\n%s", round, addr, err, out)
			}
			served++
		}
	}
	guessed := map[string]map[codes.Code]int{}
	for via, conn := range conns {
		guessed[via] = map[codes.Code]int{}
		for i := range 30 {
			guessed[via][try(conn, fmt.Sprintf("guess-%s-%d", via, i))]++
		}
	}
	t.Logf("clients cycling 5 wrong tokens, 20 rounds: %v; routerctl status with the valid token served %d of 40; 30 new guesses on each: %v",
		cycled, served, guessed)
	for via, c := range cycled {
		if c[codes.Unauthenticated] != 100 {
			t.Errorf("the client cycling wrong tokens over %s: %v; want each attempt told Unauthenticated, none refused", via, c)
		}
	}
	// The connection that cycled first spent part of its budget then.
	for via, c := range guessed {
		if c[codes.Unauthenticated] > 10 || c[codes.ResourceExhausted] < 20 || c[codes.Unauthenticated]+c[codes.ResourceExhausted] != 30 {
			t.Errorf("30 new guesses over %s: %v; want at most 10 Unauthenticated, then refused", via, c)
		}
	}
}

// TestRemoteGuesserIsLimited: a router with tokens and TLS on every
// interface, guessed at from an address of this host that is not loopback,
// a new connection each time: the address is refused after 10 failures,
// the right token from it too (unchecked), while the right token over
// loopback is served. It needs such an address; it skips without one.
func TestRemoteGuesserIsLimited(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("no address of this host other than loopback to guess from")
	}
	const good = "the-right-token-7b3c"
	ws := newWorkspace(t, 20, 67)
	certFile, keyFile, pool := selfSignedCert(t, ip)
	ws.SetConfig("tls", "tls:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+"\n")
	bind := "0.0.0.0:0"
	if ip.To4() == nil {
		bind = "[::]:0"
	}
	r := startWithAuthOpts(t, ws, good, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir(), Args: []string{"--addr", bind},
		TLS: &tls.Config{RootCAs: pool, ServerName: "mcpsag-test"}})
	defer r.Stop()
	_, port, _ := net.SplitHostPort(r.Addr)
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "mcpsag-test"})
	call := func(from, to, tok string) error {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		conn, err := grpc.NewClient(net.JoinHostPort(to, port), grpc.WithTransportCredentials(creds),
			grpc.WithPerRPCCredentials(secureToken(tok)),
			grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = pb.NewSkillRouterClient(conn).ListSkills(ctxT(t, 10*time.Second), &pb.ListSkillsRequest{})
		return err
	}
	loopback := "127.0.0.1"
	if ip.To4() == nil {
		loopback = "::1"
	}
	byCode := map[codes.Code]int{}
	for i := range 30 {
		byCode[status.Code(call(ip.String(), ip.String(), fmt.Sprintf("remote-guess-%d", i)))]++
	}
	t.Logf("30 guesses from %s, each on a new connection: %v", ip, byCode)
	if byCode[codes.Unauthenticated] != 10 || byCode[codes.ResourceExhausted] != 20 {
		t.Errorf("guesses from %s answered %v, want 10 Unauthenticated, then refused", ip, byCode)
	}
	if err := call(ip.String(), ip.String(), good); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the right token from the guessing address: %v, want refused unchecked", err)
	}
	if err := call(loopback, loopback, good); err != nil {
		t.Errorf("the right token over loopback: %v", err)
	}
}

// secureToken sends a bearer token with every call, over TLS.
type secureToken string

func (c secureToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(c)}, nil
}
func (secureToken) RequireTransportSecurity() bool { return true }

// nonLoopbackIP returns an address of an interface of this host that is
// up and not loopback, IPv4 first; nil when there is none.
func nonLoopbackIP() net.IP {
	ifaces, _ := net.Interfaces()
	var v6 net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
				continue
			}
			if n.IP.To4() != nil {
				return n.IP
			}
			if v6 == nil {
				v6 = n.IP
			}
		}
	}
	return v6
}

// selfSignedCert writes a certificate for mcpsag-test and ip (and
// loopback) and its key, and returns their files and a pool that trusts it.
func selfSignedCert(t *testing.T, ip net.IP) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpsag-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"mcpsag-test"}, IPAddresses: []net.IP{ip, net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// shortTempDir is a temporary folder whose path is short enough for a Unix
// socket inside it (t.TempDir's, under a long test name, may not be).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpsag-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
