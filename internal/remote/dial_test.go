package remote

import (
	"strings"
	"testing"
)

// TestCheckAddr: host:port and gRPC targets with a scheme pass; a host
// without a port (which gRPC would dial on 443) and what is no address at
// all are refused, saying which.
func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:7443", "[::1]:7443", "localhost:7443", ":7443", "dns:///router.internal:7443",
		"dns://8.8.8.8/router.internal:7443", "dns:router.internal:7443", "ipv4:127.0.0.1:7443,127.0.0.2:7443", "ipv6:[::1]:7443",
		"unix:///run/mcpsag/router.sock", "unix:router.sock", "passthrough:///router.internal:7443"} {
		if err := CheckAddr(ok); err != nil {
			t.Errorf("CheckAddr(%q) = %v, want nil", ok, err)
		}
	}
	for addr, want := range map[string]string{
		"127.0.0.1":       "has no port",
		"localhost":       "has no port",
		"[::1]":           "has no port",
		"router.internal": "has no port",
		"localhost:":      "has no port",
		"":                "has no port",
		"1:2:3":           "want host:port",
		"[::1":            "want host:port",
	} {
		err := CheckAddr(addr)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "127.0.0.1:7443") {
			t.Errorf("CheckAddr(%q) = %v, want %q and an example", addr, err, want)
		}
	}
	// gRPC's dns, ipv4 and ipv6 resolvers dial port 443 when the target
	// names none.
	for addr, example := range map[string]string{
		"dns:///localhost":             "dns:///localhost:7443",
		"dns://8.8.8.8/router.example": "dns:///localhost:7443",
		"dns:localhost":                "dns:///localhost:7443",
		"dns:///":                      "dns:///localhost:7443",
		"ipv4:127.0.0.1":               "ipv4:127.0.0.1:7443",
		"ipv4:127.0.0.1:7443,10.0.0.1": "ipv4:127.0.0.1:7443",
		"ipv6:[::1]":                   "ipv6:[::1]:7443",
	} {
		err := CheckAddr(addr)
		if err == nil || !strings.Contains(err.Error(), "has no port") || !strings.Contains(err.Error(), example) {
			t.Errorf("CheckAddr(%q) = %v, want \"has no port\" and %s", addr, err, example)
		}
	}
}
