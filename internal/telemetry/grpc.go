package telemetry

import (
	"context"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// otherMethod replaces method names the server does not serve, as the RPC
// semantic conventions ask (rpc.method = "_OTHER"): a client must not be
// able to mint metric series or span names by calling made-up paths.
const otherMethod = "/_OTHER"

// GRPCHandler is the gRPC server's stats handler. Build the server with it,
// register the services, then tell it which methods exist:
//
//	h := tel.GRPCServerHandler()
//	srv := grpc.NewServer(grpc.StatsHandler(h), ...)
//	routerv1.RegisterSkillRouterServer(srv, ...) // and health, reflection
//	h.KnownMethods(srv)
//
// Until KnownMethods is called, every method is recorded as "_OTHER".
type GRPCHandler struct {
	next  stats.Handler
	known atomic.Pointer[map[string]bool]
}

var _ stats.Handler = (*GRPCHandler)(nil)

// GRPCServerHandler returns the stats handler for the gRPC server. It is
// otelgrpc's server handler with this Telemetry's providers and propagator,
// WithPublicEndpoint (an inbound trace context becomes a link, not a
// parent), no spans or metrics for grpc.health.v1 checks, and rpc.method set to
// "_OTHER" for methods not reported by KnownMethods. Its duration metric is
// rpc.server.call.duration in seconds, served on /metrics as
// rpc_server_call_duration_seconds_{bucket,sum,count} with labels
// rpc_method, rpc_response_status_code, rpc_system_name and, for server
// errors, error_type. Every call returns the same handler.
func (t *Telemetry) GRPCServerHandler() *GRPCHandler {
	t.grpcOnce.Do(func() {
		t.grpcHandler = &GRPCHandler{next: otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(t.tp),
			otelgrpc.WithMeterProvider(t.mp),
			otelgrpc.WithPropagators(t.prop),
			otelgrpc.WithPublicEndpoint(),
			otelgrpc.WithFilter(func(info *stats.RPCTagInfo) bool {
				return !strings.HasPrefix(info.FullMethodName, "/grpc.health.v1.Health/")
			}),
		)}
		if t.zero != nil {
			t.zero.declare(instrument{name: MetricRPCServerDuration, unit: "s", scope: otelgrpc.ScopeName, histogram: true,
				help: "Measures the duration of inbound remote procedure calls."})
		}
	})
	return t.grpcHandler
}

// ServiceInfoProvider is what KnownMethods needs; *grpc.Server has it.
type ServiceInfoProvider interface {
	GetServiceInfo() map[string]grpc.ServiceInfo
}

// KnownMethods records the methods s serves. Call it after registering
// every service and before Serve; a later call replaces the set.
func (h *GRPCHandler) KnownMethods(s ServiceInfoProvider) {
	m := make(map[string]bool)
	for svc, info := range s.GetServiceInfo() {
		for _, meth := range info.Methods {
			m["/"+svc+"/"+meth.Name] = true
		}
	}
	h.known.Store(&m)
}

// TagRPC rewrites unknown method names, then hands over to otelgrpc.
func (h *GRPCHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if known := h.known.Load(); known == nil || !(*known)[info.FullMethodName] {
		cp := *info
		cp.FullMethodName = otherMethod
		info = &cp
	}
	return h.next.TagRPC(ctx, info)
}

// HandleRPC implements stats.Handler.
func (h *GRPCHandler) HandleRPC(ctx context.Context, s stats.RPCStats) { h.next.HandleRPC(ctx, s) }

// TagConn implements stats.Handler.
func (h *GRPCHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return h.next.TagConn(ctx, info)
}

// HandleConn implements stats.Handler.
func (h *GRPCHandler) HandleConn(ctx context.Context, s stats.ConnStats) { h.next.HandleConn(ctx, s) }
