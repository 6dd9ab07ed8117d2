// The nginx recipe, run: a real nginx (Debian's, which .ci/run installs)
// with mcpsag-router.conf in front of a router with trusted_proxies,
// terminating TLS, and calls from clients on two addresses through it over
// gRPC and MCP.
package nginx_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/testlog"
)

// Client addresses: every 127.0.0.0/8 address is this host's, so clients
// bound to two of them reach nginx (on 127.0.0.1) as two hosts would.
const (
	goodClient  = "127.0.0.2"
	guessClient = "127.0.0.3"
)

// TestNginxInFront: behind nginx, with trusted_proxies naming it, gRPC and
// MCP calls go through with TLS ended at nginx; a client guessing tokens
// is refused after its 10 failures (ResourceExhausted over gRPC, 429 over
// MCP: one budget per address for both) while another client is served;
// the audit names the client nginx forwarded for; and a client that
// reaches the router directly cannot choose its address with the same
// headers. Without trusted_proxies, each of nginx's connections to the
// router was a local caller of its own, and the guesser was never refused.
func TestNginxInFront(t *testing.T) {
	bin := nginxBinary(t)
	pki := daemontest.NewPKI(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	must(t, os.WriteFile(tokens, []byte("tokens:\n  - {id: app, sha256: "+auth.HashToken("app-secret")+", groups: [read, match, load]}\n"), 0o600))
	logs := &testlog.Buffer{}
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Logs: logs, Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Auth.Enabled, c.Auth.TokensFile = true, tokens
		c.TrustedProxies = []string{"127.0.0.1"}
	}})
	front := startNginx(t, bin, pki, r.Addr, r.Main.MCPAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	good := dialGRPC(t, front, goodClient, pki)
	guesser := dialGRPC(t, front, guessClient, pki)
	t.Run("gRPC", func(t *testing.T) {
		res, err := routerv1.NewSkillRouterClient(good).Match(withToken(ctx, "app-secret"), &routerv1.MatchRequest{Task: "fill in a PDF form from a JSON file"})
		if err != nil || len(res.GetCandidates()) == 0 || res.GetCandidates()[0].GetSkill().GetName() != "pdf-form-filling" {
			t.Fatalf("Match through nginx: %v, %v", res, err)
		}
		h, err := healthpb.NewHealthClient(good).Check(ctx, &healthpb.HealthCheckRequest{Service: "mcpsag.router.v1.SkillRouter"})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health through nginx: %v, %v", h, err)
		}
	})

	t.Run("failed-auth limit", func(t *testing.T) {
		rc := routerv1.NewSkillRouterClient(guesser)
		for i := range 10 {
			_, err := rc.Status(withToken(ctx, fmt.Sprintf("guess-%d", i)), &routerv1.StatusRequest{})
			if status.Code(err) != codes.Unauthenticated {
				t.Fatalf("guess %d: %v, want Unauthenticated", i+1, err)
			}
		}
		// A forged hop changes nothing: nginx adds the address it sees.
		forged := metadata.AppendToOutgoingContext(withToken(ctx, "guess-10"), "x-forwarded-for", goodClient, "x-real-ip", goodClient)
		if _, err := rc.Status(forged, &routerv1.StatusRequest{}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("guess 11, naming another client: %v, want ResourceExhausted: the guesser's budget is spent", err)
		}
		if _, err := routerv1.NewSkillRouterClient(good).Status(withToken(ctx, "app-secret"), &routerv1.StatusRequest{}); err != nil {
			t.Errorf("the other client, meanwhile: %v", err)
		}
		audit := logs.String()
		if !strings.Contains(audit, `"client.address":"`+guessClient+`"`) {
			t.Errorf("no auth_failure audit record names the guessing client %s:\n%s", guessClient, tail(audit, 10))
		}
	})

	t.Run("MCP", func(t *testing.T) {
		cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "behind-nginx", Version: "1"}, nil).Connect(ctx,
			&mcpsdk.StreamableClientTransport{Endpoint: "https://" + front + "/mcp", HTTPClient: httpClient(goodClient, pki, "app-secret")}, nil)
		if err != nil {
			t.Fatalf("MCP through nginx: %v", err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": "my pod is stuck in CrashLoopBackOff"}})
		if err != nil || res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "kubernetes-debugging") {
			t.Errorf("find_skills through nginx: %v, %v", res, err)
		}
		// The guesser's budget, spent over gRPC, is its budget over MCP.
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+front+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient(guessClient, pki, "guess-11").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a guess over MCP from the guessing client: %d %v, want 429 with Retry-After", resp.StatusCode, resp.Header)
		}
	})

	t.Run("headers from anyone else", func(t *testing.T) {
		const claimed = "198.51.100.1"
		direct := dialGRPC(t, r.Addr, "127.0.0.4", nil)
		md := metadata.AppendToOutgoingContext(withToken(ctx, "guess-direct"), "x-forwarded-for", claimed, "x-real-ip", claimed)
		if _, err := routerv1.NewSkillRouterClient(direct).Status(md, &routerv1.StatusRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("a direct call with a wrong token: %v", err)
		}
		audit := logs.String()
		if strings.Contains(audit, claimed) || !strings.Contains(audit, `"client.address":"127.0.0.4:`) {
			t.Errorf("a client that is no trusted proxy chose its address %s, or was not audited by its own:\n%s", claimed, tail(audit, 10))
		}
	})
}

// nginxBinary finds nginx, or skips the test saying how to get it.
func nginxBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("MCPSAG_NGINX"), "nginx", "/usr/sbin/nginx"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("nginx not found: apt-get install nginx (or MCPSAG_NGINX=/path/to/nginx); .ci/run installs it")
	return ""
}

// startNginx runs nginx with the recipe, its addresses and certificate
// replaced by the test's, and returns where it listens. It stops with the
// test.
func startNginx(t *testing.T, bin string, pki *daemontest.PKI, grpcAddr, mcpAddr string) string {
	t.Helper()
	recipe, err := os.ReadFile("mcpsag-router.conf")
	must(t, err)
	listen := daemontest.FreeAddr(t)
	conf := string(recipe)
	for _, rep := range []struct{ old, new string }{
		{"listen 443 ssl http2;", "listen " + listen + " ssl http2;"},
		{"grpc://127.0.0.1:7443", "grpc://" + grpcAddr},
		{"http://127.0.0.1:7444", "http://" + mcpAddr},
		{"/etc/nginx/tls/router.example.com.crt", pki.ServerCert},
		{"/etc/nginx/tls/router.example.com.key", pki.ServerKey},
	} {
		if !strings.Contains(conf, rep.old) {
			t.Fatalf("mcpsag-router.conf no longer has %q, which the test replaces", rep.old)
		}
		conf = strings.ReplaceAll(conf, rep.old, rep.new)
	}
	// nginx's workers run as another user when it starts as root: its
	// folder must be theirs to enter.
	prefix, err := os.MkdirTemp("", "mcpsag-nginx-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(prefix) })
	must(t, os.Chmod(prefix, 0o755))
	must(t, os.WriteFile(filepath.Join(prefix, "mcpsag-router.conf"), []byte(conf), 0o644))
	main := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 64; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/mcpsag-router.conf;
}
`, prefix)
	must(t, os.WriteFile(filepath.Join(prefix, "nginx.conf"), []byte(main), 0o644))
	cmd := exec.Command(bin, "-p", prefix, "-c", filepath.Join(prefix, "nginx.conf"), "-e", filepath.Join(prefix, "error.log"))
	out := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
			c.Close()
			return listen
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			t.Fatalf("nginx exited (%v):\n%s%s", err, out.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not listen on %s after 30s:\n%s", listen, out.String())
		}
	}
}

// dialGRPC connects to addr from the local address from, with TLS for
// nginx's certificate when pki is set.
func dialGRPC(t *testing.T, addr, from string, pki *daemontest.PKI) *grpc.ClientConn {
	t.Helper()
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	if pki != nil {
		creds = grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pki.CAPool, ServerName: "localhost"}))
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := grpc.NewClient("passthrough:///"+addr, creds, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", a)
	}))
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// httpClient calls from the local address from, trusting nginx's
// certificate, with a bearer token.
func httpClient(from string, pki *daemontest.PKI, token string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{RootCAs: pki.CAPool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
	return &http.Client{Transport: bearer{token, tr}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
