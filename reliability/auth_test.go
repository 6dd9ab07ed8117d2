package reliability

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWrongTokenSessionBesideValidClients runs what a misconfigured host
// runs: `router mcp --connect` with a wrong token and with none, started
// again and again as hosts restart a server that exits, against a router
// with authentication on, from 127.0.0.1, the address every local client
// shares. Each start fails its probes; well past an address's budget of
// failures, routerctl with the right token from the same address must
// still work, and each session must still say why it fails (the token),
// not that the address is limited.
func TestWrongTokenSessionBesideValidClients(t *testing.T) {
	const good = "the-right-token-51d0"
	r := startWithAuth(t, newWorkspace(t, 20, 41), good)
	defer r.Stop()

	const budget = 10 // auth.DefaultClientFailureBurst
	sessions := []struct{ token, want string }{
		{"a-wrong-token", "invalid bearer token"},
		{"", "missing bearer token"},
	}
	for i := range 4 {
		for _, s := range sessions {
			cmd := exec.Command(builtBinary(t, "router"), "mcp", "--connect", r.Addr)
			cmd.Env = append(os.Environ(), "MCPSAG_TOKEN="+s.token)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), s.want) || strings.Contains(string(out), "too many") {
				t.Errorf("start %d with token %q: %v; want it to fail saying %q:\n%s", i+1, s.token, err, s.want, out)
			}
		}
	}
	bad := metricValue(t, r.Admin, `skillrouter_auth_failures_total{`, `reason="bad_token"`)
	none := metricValue(t, r.Admin, `skillrouter_auth_failures_total{`, `reason="no_token"`)
	limited := metricValue(t, r.Admin, `skillrouter_auth_failures_total{`, `reason="client_limited"`)
	t.Logf("failed attempts from 127.0.0.1: %v with the wrong token, %v without one; %v refused as limited", bad, none, limited)
	if bad+none <= budget {
		t.Fatalf("only %v failed attempts: not past the budget of %d, the test proves nothing", bad+none, budget)
	}
	if limited != 0 {
		t.Errorf("%v refusals of 127.0.0.1: the sessions' repeats spent its budget", limited)
	}
	ctl := exec.Command(builtBinary(t, "routerctl"), "--addr", r.Addr, "status")
	ctl.Env = append(os.Environ(), "MCPSAG_TOKEN="+good)
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Errorf("routerctl status with the right token beside the sessions: %v\n%s", err, out)
	}
	if audits := r.logs.count(`"event":"auth_failure"`); audits > 4 {
		t.Errorf("%d auth_failure audit records for two tokens' repeats within a minute; want the first of each (and a sampled repeat)", audits)
	}
	if r.Crashed() {
		t.Errorf("the router crashed:\n%s", r.logs.tail(30))
	}
}
