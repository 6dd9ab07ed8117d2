package main

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

const healthUsage = `
Usage: routerctl health [--service NAME]

Asks the router's standard gRPC health service (grpc.health.v1.Health/Check)
whether it serves, and exits 0 only when the answer is SERVING; NOT_SERVING
(the first index is still being built, or the router is draining before a
stop), an unknown service name or an unreachable router exit 1. It makes one
call and does not retry, so container and service-manager health checks can
use it directly (--timeout bounds the call). Health needs no token.

Output: the status (SERVING, NOT_SERVING, SERVICE_UNKNOWN); with --json an
object {"addr", "service", "status", "serving"}.
`

// routerService is the health service name the router registers for its API.
const routerService = "mcpsag.router.v1.SkillRouter"

// healthOutput is health's --json output.
type healthOutput struct {
	Addr    string `json:"addr"`
	Service string `json:"service"`
	Status  string `json:"status"`
	Serving bool   `json:"serving"`
}

func runHealth(e *env, args []string) error {
	fs := newFlags(e, "health", healthUsage)
	service := fs.String("service", routerService, "health service `name` to check (\"\" is the server as a whole)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("health takes no arguments, got %q", pos[0])}
	}
	if _, err := e.client(); err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	out := healthOutput{Addr: e.addr, Service: *service}
	res, err := healthpb.NewHealthClient(e.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	switch {
	case status.Code(err) == codes.NotFound:
		// The health server answers NotFound for a service it does not know.
		out.Status = healthpb.HealthCheckResponse_SERVICE_UNKNOWN.String()
	case err != nil:
		return err
	default:
		out.Status = res.GetStatus().String()
		out.Serving = res.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}
	if e.json {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, string(b))
	} else {
		fmt.Fprintln(e.stdout, out.Status)
	}
	if !out.Serving {
		return exitStatus(exitError)
	}
	return nil
}
