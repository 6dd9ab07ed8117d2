package skillpb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/mcpsag/router/internal/skill"
)

// ErrorDomain names the router in ErrorInfo details.
const ErrorDomain = "mcpsag.router"

// grpcCodes maps the domain's error codes onto gRPC codes, and back.
var grpcCodes = table(map[skill.Code]codes.Code{
	skill.CodeInvalidArgument:    codes.InvalidArgument,
	skill.CodeNotFound:           codes.NotFound,
	skill.CodePermissionDenied:   codes.PermissionDenied,
	skill.CodeFailedPrecondition: codes.FailedPrecondition,
	skill.CodeUnavailable:        codes.Unavailable,
	skill.CodeResourceExhausted:  codes.ResourceExhausted,
	skill.CodeUnimplemented:      codes.Unimplemented,
	skill.CodeInternal:           codes.Internal,
})

// otherCodes are the gRPC codes only transports and interceptors produce,
// with the domain code each stands for.
var otherCodes = map[codes.Code]skill.Code{
	codes.OutOfRange:      skill.CodeInvalidArgument,
	codes.Unauthenticated: skill.CodePermissionDenied,
	codes.AlreadyExists:   skill.CodeFailedPrecondition,
	codes.Aborted:         skill.CodeFailedPrecondition,
	codes.Unknown:         skill.CodeInternal,
	codes.DataLoss:        skill.CodeInternal,
}

// StatusOf converts a domain error into a gRPC status error. Errors about
// a request field (invalid arguments, and refusals such as a path that
// leaves the skill folder) carry a BadRequest field violation; errors with a
// reason carry
// ErrorInfo. Context errors keep their meaning (deadline, cancellation).
// An internal error (not a *skill.Error, or CodeInternal) is handed to
// internal, which logs it and returns the request id the answer quotes:
// its text may name host paths.
func StatusOf(err error, internal func(error) string) error {
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
	if !errors.As(err, &de) || de.Code == skill.CodeInternal {
		return InternalError(internal(err))
	}
	code, ok := grpcCodes.toPB[de.Code]
	if !ok {
		code = codes.Unknown
	}
	msg := de.Message // never the wrapped cause: it may name host paths
	if de.Field != "" {
		msg = de.Field + ": " + msg
	}
	st := status.New(code, msg)
	var details []protoadapt.MessageV1
	if de.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: de.Field, Description: de.Message},
		}})
	}
	if de.Reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: de.Reason, Domain: ErrorDomain})
	}
	if len(details) > 0 {
		if withD, err := st.WithDetails(details...); err == nil {
			st = withD
		}
	}
	return st.Err()
}

// InternalError is the answer to an internal error: the request id under
// which the router logged the details, nothing else.
func InternalError(requestID string) error {
	return status.Errorf(codes.Internal, "internal error (request id %s); the router logged the details", requestID)
}

// ErrorOf is the inverse of StatusOf: it turns the error of a gRPC call
// into a domain error. When the caller's context ended, its error is
// returned as is, as the skill.Router contract asks; so are deadline and
// cancellation statuses. A BadRequest field violation gives Field and
// Message, ErrorInfo gives Reason, RetryInfo adds the delay to the message.
// Transport failures keep their text (which may name addresses or socket
// paths) only in the wrapped cause.
func ErrorOf(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("router call: %w", err)
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("the router: %s: %w", st.Message(), context.DeadlineExceeded)
	case codes.Canceled:
		return fmt.Errorf("the router: %s: %w", st.Message(), context.Canceled)
	}
	code, ok := grpcCodes.fromPB[st.Code()]
	if !ok {
		if code, ok = otherCodes[st.Code()]; !ok {
			code = skill.CodeInternal
		}
	}
	de := &skill.Error{Code: code, Message: st.Message(), Err: err}
	switch {
	case st.Code() == codes.Unauthenticated:
		de.Message = "the router refused the credentials: " + st.Message()
	case st.Code() == codes.Unavailable && transportFailure(st.Message()):
		de.Message, de.Reason = "cannot reach the router", skill.ReasonRouterLost
		if notSent(st.Message()) {
			de.Reason = skill.ReasonRouterUnreachable
		}
	}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 {
				de.Field, de.Message = v[0].GetField(), v[0].GetDescription()
			}
		case *errdetails.ErrorInfo:
			de.Reason = d.GetReason()
		case *errdetails.RetryInfo:
			if delay := d.GetRetryDelay(); delay != nil {
				de.Message += fmt.Sprintf(" (retry after %v)", delay.AsDuration().Round(time.Millisecond))
			}
		}
	}
	return de
}

// notSent reports whether a transport failure happened before the call was
// sent: no connection could be made (gRPC fails such a call at once with
// the connection's error), so the router never saw it.
func notSent(msg string) bool {
	return strings.HasPrefix(msg, "connection error") || strings.Contains(msg, "name resolver")
}

// transportFailure reports whether an Unavailable status came from the
// client's transport (no connection) rather than from the router.
func transportFailure(msg string) bool {
	for _, p := range []string{"connection error", "name resolver", "error reading from server", "connection closed", "transport", "dial ", "EOF"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
