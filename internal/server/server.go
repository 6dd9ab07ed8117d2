// Package server exposes a skill.Router over gRPC. It is a thin translator:
// proto in, domain call, proto out, through internal/skillpb, which holds
// the mapping both ways (the remote client uses its inverses) and the one
// table of domain error codes and gRPC status codes. New builds a grpc.Server with everything production needs:
// panic recovery, call logging, per-method deadlines, message and stream
// limits, keepalive, the standard health service and server reflection.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skillpb"
)

// Message limits. Requests are small (a task is at most 16 KiB); replies carry
// at most one resource file (1 MiB by default) or a body under the token cap.
const (
	maxRecvBytes         = 1 << 20
	maxSendBytes         = 16 << 20
	maxConcurrentStreams = 256
)

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// StatsHandler instruments the server (OpenTelemetry); optional.
	StatsHandler stats.Handler
	// Interceptors run after recovery and logging, before the handler
	// (authentication, rate limits).
	Interceptors       []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor
	// Authenticate runs before the request of a call to the router's API
	// is decoded (auth.Guard.Authenticate); optional. An error refuses the
	// call with it.
	Authenticate func(ctx context.Context, method string) (context.Context, error)
	// ServerOptions are appended last (TLS credentials).
	ServerOptions []grpc.ServerOption
	// Timeouts caps each method's run time by full method name; methods
	// not listed get DefaultTimeout.
	Timeouts       map[string]time.Duration
	DefaultTimeout time.Duration
}

// Server is a configured gRPC server with its health service.
type Server struct {
	GRPC   *grpc.Server
	Health *health.Server
	// inFlight counts the calls and streams being handled.
	inFlight atomic.Int64
}

// InFlight returns how many calls and streams (server reflection, health
// watches) the server is handling now, from the moment they passed
// authentication (a call refused before its request is read is not
// counted).
func (s *Server) InFlight() int64 { return s.inFlight.Load() }

// New builds the gRPC server and registers svc, health and reflection. Health
// starts NOT_SERVING; call SetServing once the first index is loaded.
func New(svc routerv1.SkillRouterServer, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 30 * time.Second
	}
	s := &Server{}
	chain := append([]grpc.UnaryServerInterceptor{
		s.countUnary,
		recoverUnary(log),
		logUnary(log),
		deadlineUnary(opts.Timeouts, opts.DefaultTimeout),
	}, opts.Interceptors...)
	so := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(chain...),
		grpc.ChainStreamInterceptor(append([]grpc.StreamServerInterceptor{s.countStream, recoverStream(log)}, opts.StreamInterceptors...)...),
		grpc.ForceServerCodecV2(newServerCodec(log)),
		grpc.MaxRecvMsgSize(maxRecvBytes),
		grpc.MaxSendMsgSize(maxSendBytes),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 15 * time.Minute, Time: 2 * time.Minute, Timeout: 20 * time.Second}),
		grpc.ConnectionTimeout(10 * time.Second),
		grpc.MaxHeaderListSize(64 << 10),
		// Unknown methods get a clear answer, and telemetry sees the call
		// end (it records them as "_OTHER").
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			method, _ := grpc.MethodFromServerStream(stream)
			return status.Errorf(codes.Unimplemented, "unknown method %s; this router serves %s", method, routerv1.SkillRouter_ServiceDesc.ServiceName)
		}),
	}
	if opts.StatsHandler != nil {
		so = append(so, grpc.StatsHandler(opts.StatsHandler))
	}
	so = append(so, opts.ServerOptions...)

	gs := grpc.NewServer(so...)
	gs.RegisterService(guardDecoding(&routerv1.SkillRouter_ServiceDesc, opts.Authenticate), svc)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(routerv1.SkillRouter_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	s.GRPC, s.Health = gs, hs
	return s
}

// countUnary and countStream count the calls in flight.
func (s *Server) countUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	return h(ctx, req)
}

func (s *Server) countStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	return h(srv, ss)
}

// SetServing marks the router ready (or not) in the health service.
func (s *Server) SetServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.Health.SetServingStatus("", st)
	s.Health.SetServingStatus(routerv1.SkillRouter_ServiceDesc.ServiceName, st)
}

// recoverUnary turns a handler panic into an Internal error, logs it with its
// stack, and keeps the process alive.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				id := newRequestID()
				log.Error("handler panicked", "request_id", id, "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				resp, err = nil, skillpb.InternalError(id)
			}
		}()
		return h(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				id := newRequestID()
				log.Error("stream handler panicked", "request_id", id, "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = skillpb.InternalError(id)
			}
		}()
		return h(srv, ss)
	}
}

// logUnary logs each call's method, code and duration; never payloads.
func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		code := status.Code(err)
		level := slog.LevelDebug
		switch code {
		case codes.OK, codes.NotFound, codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated,
			codes.FailedPrecondition, codes.ResourceExhausted, codes.Canceled:
		default:
			level = slog.LevelWarn
		}
		if strings.HasPrefix(info.FullMethod, "/grpc.") {
			level = slog.LevelDebug // health and reflection are chatty
		}
		log.Log(ctx, level, "rpc", "method", info.FullMethod, "code", code.String(), "duration", time.Since(start))
		return resp, err
	}
}

// deadlineUnary bounds each call even when the client set no deadline.
func deadlineUnary(per map[string]time.Duration, def time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		d, ok := per[info.FullMethod]
		if !ok {
			d = def
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return h(ctx, req)
	}
}
