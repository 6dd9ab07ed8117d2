package server

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/mcpsag/router/internal/skill"
)

// errorDomain names the router in ErrorInfo details.
const errorDomain = "mcpsag.router"

// grpcCodes maps domain codes to gRPC codes; it is the only such table.
var grpcCodes = map[skill.Code]codes.Code{
	skill.CodeInvalidArgument:    codes.InvalidArgument,
	skill.CodeNotFound:           codes.NotFound,
	skill.CodePermissionDenied:   codes.PermissionDenied,
	skill.CodeFailedPrecondition: codes.FailedPrecondition,
	skill.CodeUnavailable:        codes.Unavailable,
	skill.CodeResourceExhausted:  codes.ResourceExhausted,
	skill.CodeUnimplemented:      codes.Unimplemented,
	skill.CodeInternal:           codes.Internal,
}

// toStatus converts a domain error to a gRPC status error. Invalid arguments
// carry a BadRequest field violation; errors with a reason carry ErrorInfo.
// Context errors keep their meaning (deadline, cancellation). Errors that are
// not *skill.Error are internal and their text is not sent to the client.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "the call ran out of time")
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "the call was cancelled")
	}
	var de *skill.Error
	if !errors.As(err, &de) {
		return status.Error(codes.Internal, "internal error; the router logged the details")
	}
	code, ok := grpcCodes[de.Code]
	if !ok {
		code = codes.Unknown
	}
	st := status.New(code, de.Error())
	var details []protoadapt.MessageV1
	if de.Code == skill.CodeInvalidArgument && de.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: de.Field, Description: de.Message},
		}})
	}
	if de.Reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: de.Reason, Domain: errorDomain})
	}
	if len(details) > 0 {
		if withD, err := st.WithDetails(details...); err == nil {
			st = withD
		}
	}
	return st.Err()
}
