package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// healthOutput is health's JSON output.
type healthOutput struct {
	Addr    string `json:"addr"`
	Service string `json:"service"`
	// Status is SERVING, NOT_SERVING, SERVICE_UNKNOWN or UNKNOWN, or
	// UNREACHABLE when the router did not answer.
	Status  string `json:"status"`
	Serving bool   `json:"serving"`
	// Error says why the router did not answer; empty when it did.
	Error string `json:"error"`
}

func newHealthCmd(e *env) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "check whether the router serves (exit 0) or not (exit 1)",
		Long: `Asks the router's standard gRPC health service (grpc.health.v1) about
service mcpsag.router.v1.SkillRouter. Exit code 0 only when it is SERVING;
1 when it is NOT_SERVING (building its first index, or draining at
shutdown) or does not answer. Unlike the other commands it asks once, for
probes; --wait asks again until SERVING or --timeout.`,
		Example: `  routerctl health
  routerctl health --wait --timeout 2m   # in a start script
  routerctl health --json`,
		Args: noArgs,
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "ask until the router serves, up to --timeout")
	cmd.RunE = e.remote(0, func(ctx context.Context, _ routerv1.SkillRouterClient, _ []string) error {
		out := healthOutput{Addr: e.addr, Service: routerv1.SkillRouter_ServiceDesc.ServiceName}
		hc := healthpb.NewHealthClient(e.conn)
		delay := retryFirst
		for {
			next := check(withoutRetry(ctx), hc, out)
			if ctx.Err() != nil && out.Status != "" {
				break // keep the last answer, not "deadline exceeded"
			}
			out = next
			if out.Serving || !wait || ctx.Err() != nil {
				break
			}
			e.progress.Show("waiting for the router at %s to serve: %s", e.addr, strings.ToLower(out.Status))
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
			delay = min(2*delay, retryMax)
		}
		e.progress.Clear()
		if e.json {
			if err := e.printJSON(out); err != nil {
				return err
			}
		} else if out.Error != "" {
			fmt.Fprintf(e.stdout, "%s: %s (%s)\n", e.addr, strings.ToLower(out.Status), out.Error)
		} else {
			fmt.Fprintf(e.stdout, "%s: %s\n", e.addr, strings.ToLower(out.Status))
		}
		if !out.Serving {
			return exitStatus(exitError)
		}
		return nil
	})
	return cmd
}

// check asks the health service once and fills out's answer fields.
func check(ctx context.Context, hc healthpb.HealthClient, out healthOutput) healthOutput {
	res, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: out.Service})
	out.Status, out.Error = res.GetStatus().String(), ""
	if err != nil {
		out.Status, out.Error = "UNREACHABLE", err.Error()
		if st, ok := status.FromError(err); ok {
			out.Error = st.Message()
			if st.Code() == codes.NotFound {
				out.Status = healthpb.HealthCheckResponse_SERVICE_UNKNOWN.String()
			}
		}
	}
	out.Serving = out.Status == healthpb.HealthCheckResponse_SERVING.String()
	return out
}
