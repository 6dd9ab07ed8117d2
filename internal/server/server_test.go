package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func TestToStatus(t *testing.T) {
	tests := []struct {
		err    error
		code   codes.Code
		field  string
		reason string
	}{
		{skill.InvalidArgument("task", "empty"), codes.InvalidArgument, "task", ""},
		{skill.Errorf(skill.CodeNotFound, "no"), codes.NotFound, "", ""},
		{skill.Errorf(skill.CodePermissionDenied, "out").WithReason("PATH_ESCAPE"), codes.PermissionDenied, "", "PATH_ESCAPE"},
		{fmt.Errorf("wrapped: %w", skill.Errorf(skill.CodeUnavailable, "loading")), codes.Unavailable, "", ""},
		{errors.New("secret internal detail /etc/x"), codes.Internal, "", ""},
		{skill.Errorf(skill.CodeInternal, "bm25: secret /etc/x"), codes.Internal, "", ""},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "", ""},
	}
	for _, tc := range tests {
		st := status.Convert(skillpb.StatusOf(tc.err, func(error) string { return "id-1" }))
		if st.Code() != tc.code {
			t.Errorf("%v -> %v, want %v", tc.err, st.Code(), tc.code)
		}
		if tc.code == codes.Internal && st.Message() != "internal error (request id id-1); the router logged the details" {
			t.Errorf("internal error text leaked: %q", st.Message())
		}
		var field, reason string
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.BadRequest:
				field = d.FieldViolations[0].Field
			case *errdetails.ErrorInfo:
				reason = d.Reason
			}
		}
		if field != tc.field || reason != tc.reason {
			t.Errorf("%v: field %q reason %q, want %q %q", tc.err, field, reason, tc.field, tc.reason)
		}
	}
}

type panicky struct {
	routerv1.UnimplementedSkillRouterServer
}

func (panicky) Status(context.Context, *routerv1.StatusRequest) (*routerv1.StatusResponse, error) {
	panic("boom")
}

// TestNotServingUntilReadyAndPanicsRecovered: health starts NOT_SERVING, and a
// handler panic becomes Internal without killing the server.
func TestNotServingUntilReadyAndPanicsRecovered(t *testing.T) {
	s := New(panicky{}, Options{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.GRPC.Serve(lis)
	defer s.GRPC.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		res, err := h.Check(context.Background(), &healthpb.HealthCheckRequest{Service: routerv1.SkillRouter_ServiceDesc.ServiceName})
		if err != nil {
			t.Fatal(err)
		}
		return res.Status
	}
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("before ready: %v", got)
	}
	s.SetServing(true)
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("after ready: %v", got)
	}
	_, err = routerv1.NewSkillRouterClient(conn).Status(context.Background(), &routerv1.StatusRequest{})
	if status.Code(err) != codes.Internal {
		t.Errorf("panicking handler: %v, want Internal", err)
	}
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("server unhealthy after a panic: %v", got)
	}
}
