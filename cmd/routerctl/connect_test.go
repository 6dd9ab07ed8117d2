package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestNoRouterIsReportedAtOnce: with nothing listening, a command fails in
// well under 2 s by default and says how to wait for a router that is
// starting; with --timeout it waits that long.
func TestNoRouterIsReportedAtOnce(t *testing.T) {
	addr := daemontest.FreeAddr(t)
	for _, args := range [][]string{{"list"}, {"status", "--json"}, {"match", "a task"}} {
		res := ctl(t, append(args, "--addr", addr)...)
		if res.code != 1 || res.took > 2*time.Second {
			t.Errorf("%v: exit %d after %s, want 1 in under 2s", args, res.code, res.took)
		}
		if !strings.Contains(res.stderr, "no router answered at "+addr) || !strings.Contains(res.stderr, "--timeout") {
			t.Errorf("%v: stderr %q does not say no router answered, nor how to wait", args, res.stderr)
		}
	}
	res := ctl(t, "list", "--addr", addr, "--timeout", "1500ms")
	if res.code != 1 || res.took < 1500*time.Millisecond || !strings.Contains(res.stderr, "gave up after 1.5s (--timeout)") {
		t.Errorf("--timeout 1500ms: exit %d after %s: %q; want it to wait", res.code, res.took, res.stderr)
	}
}

// TestCertificateThatDoesNotVerify: against a TLS router whose certificate
// another CA signed, a command fails at once, even with a long --timeout,
// and says the certificate did not verify rather than that the router may
// not run.
func TestCertificateThatDoesNotVerify(t *testing.T) {
	pki, other := daemontest.NewPKI(t), daemontest.NewPKI(t)
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		c.TLS = config.TLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}
	}})
	res := ctl(t, "list", "--addr", r.Addr, "--tls-ca", other.CAFile, "--timeout", "30s")
	if res.code != 1 || res.took > 5*time.Second {
		t.Errorf("exit %d after %s, want 1 at once", res.code, res.took)
	}
	if !strings.Contains(res.stderr, "certificate did not verify") || !strings.Contains(res.stderr, "--tls-ca") || strings.Contains(res.stderr, "running") {
		t.Errorf("stderr %q; want the certificate named, and --tls-ca", res.stderr)
	}
	if res := ctl(t, "list", "--addr", r.Addr, "--tls-ca", pki.CAFile, "--tls-server-name", "localhost"); res.code != 0 || !strings.Contains(res.stdout, "7 skills") {
		t.Errorf("with the right CA: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
}

// TestTLSOnOneSideOnly: a routerctl without TLS against a router with TLS,
// and one with TLS against a router without, fail at once, even with a
// long --timeout, and say which side speaks TLS and what to change, not
// that the router may not run (both did: "no router answered ... is it
// running?").
func TestTLSOnOneSideOnly(t *testing.T) {
	pki := daemontest.NewPKI(t)
	withTLS := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		c.TLS = config.TLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}
	}})
	plain := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no TLS to a TLS router", []string{"list", "--addr", withTLS.Addr, "--timeout", "30s"},
			[]string{"the server at " + withTLS.Addr + " accepted the connection and closed it", "router with TLS on", "connect with TLS: --tls-ca FILE"}},
		{"TLS to a router without", []string{"list", "--addr", plain.Addr, "--tls-ca", pki.CAFile, "--timeout", "30s"},
			[]string{"the server at " + plain.Addr + " does not speak TLS", "drop --tls-ca"}},
		{"health, no TLS to a TLS router", []string{"health", "--json", "--addr", withTLS.Addr},
			[]string{`"status": "UNREACHABLE"`, "router with TLS on"}},
	} {
		res := ctl(t, tc.args...)
		out := res.stdout + res.stderr
		if res.code != 1 || res.took > 5*time.Second {
			t.Errorf("%s: exit %d after %s, want 1 at once", tc.name, res.code, res.took)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output %q does not say %q", tc.name, out, w)
			}
		}
		if strings.Contains(out, "no router answered") || strings.Contains(out, "is it running") {
			t.Errorf("%s: output %q says the router may not run", tc.name, out)
		}
	}
}

// TestAddressWithoutPort: an address without a port is a usage error, not
// a dial of port 443, also as a target of gRPC's dns resolver.
func TestAddressWithoutPort(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"list", "--addr", "127.0.0.1"}, `--addr "127.0.0.1" has no port`},
		{nil, []string{"status", "--addr", "[::1]"}, `--addr "[::1]" has no port`},
		{map[string]string{"MCPSAG_ADDR": "localhost"}, []string{"status"}, `MCPSAG_ADDR "localhost" has no port`},
		{nil, []string{"list", "--addr", "dns:///localhost"}, `--addr "dns:///localhost" has no port (gRPC would dial port 443); want host:port such as dns:///localhost:7443`},
		{map[string]string{"MCPSAG_ADDR": "dns:localhost"}, []string{"health"}, `MCPSAG_ADDR "dns:localhost" has no port`},
	} {
		res := ctlEnv(t, tc.env, tc.args...)
		if res.code != 2 || !strings.Contains(res.stderr, tc.want) || res.took > 2*time.Second {
			t.Errorf("%v %v: exit %d after %s, stderr %q; want 2 and %q", tc.env, tc.args, res.code, res.took, res.stderr, tc.want)
		}
	}
}

// TestRefusedFlagValuesAreUsageErrors: a value the router refuses
// (InvalidArgument) exits 2 like any bad flag value, naming the help to
// read; the kinds filter speaks of tools when it lists or matches tools.
func TestRefusedFlagValuesAreUsageErrors(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	env := map[string]string{"MCPSAG_ADDR": r.Addr}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"match", "--top-k", "100", "a task"}, "top_k 100 is outside [0, 50]"},
		{[]string{"load", "release-notes", "--budget", "999999"}, "token_budget"},
		{[]string{"list", "--budget", "9999999"}, "catalog_char_budget"},
	} {
		res := ctlEnv(t, env, tc.args...)
		lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
		if res.code != 2 || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || lines[1] != "see routerctl "+tc.args[0]+" --help" {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q and the help to read", tc.args, res.code, res.stderr, tc.want)
		}
	}
	if res := ctlEnv(t, env, "match", "--kinds", "tools", "read a text file"); res.code != 0 ||
		!strings.Contains(res.stdout, "no tool fits (no_tools)") || strings.Contains(res.stdout, "skill") || !strings.Contains(res.stdout, "routerctl servers") {
		t.Errorf("match --kinds tools without MCP servers: exit %d: %q", res.code, res.stdout)
	}
	// The JSON says so too, as gRPC does: reason NO_TOOLS, and its words
	// speak of tools (it said ABSTAIN_REASON_NO_SKILLS, "no skill is
	// visible").
	res := ctlEnv(t, env, "match", "--kinds", "tools", "--json", "read a text file")
	doc := jsonDoc(t, res)
	if res.code != 0 || doc["abstain_reason"] != "ABSTAIN_REASON_NO_TOOLS" || doc["verdict"] != "MATCH_VERDICT_NO_SKILL" {
		t.Errorf("match --kinds tools --json without MCP servers: exit %d: %v", res.code, doc)
	}
	for _, key := range []string{"abstain_detail", "verdict_detail"} {
		if got, _ := doc[key].(string); got != "no tool is visible to this caller" {
			t.Errorf("match --kinds tools --json: %s = %q, want \"no tool is visible to this caller\"", key, got)
		}
	}
	if res := ctlEnv(t, env, "list", "--kinds", "tools"); res.code != 0 || !strings.Contains(res.stdout, "0 tools (index generation") {
		t.Errorf("list --kinds tools: exit %d: %q", res.code, res.stdout)
	}
}

// TestHealthStates: health exits 1 and says so for a router that drains
// before a stop (NOT_SERVING) and for a gRPC server that does not serve the
// router's API (SERVICE_UNKNOWN).
func TestHealthStates(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		c.Shutdown.Drain = 3 * time.Second
	}})
	addr, m := r.Addr, r.Main
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = m.Close(context.Background())
	}()
	t.Cleanup(func() { <-stopped })
	r.Main = nil // stopped above
	res := ctl(t, "health", "--addr", addr, "--json")
	if doc := jsonDoc(t, res); res.code != 1 || field(t, doc, "status") != "NOT_SERVING" || field(t, doc, "error") != "" {
		t.Errorf("draining router: exit %d, %v; want 1 and NOT_SERVING", res.code, doc)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	res = ctl(t, "health", "--addr", lis.Addr().String())
	if res.code != 1 || !strings.Contains(res.stdout, "service_unknown") {
		t.Errorf("a server without the router's API: exit %d: %q", res.code, res.stdout)
	}
}
