package remote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpsag/router/internal/skill"
)

// domainCodes maps gRPC codes back to domain codes, the inverse of the
// server's table plus the codes only transports and interceptors produce.
var domainCodes = map[codes.Code]skill.Code{
	codes.InvalidArgument:    skill.CodeInvalidArgument,
	codes.OutOfRange:         skill.CodeInvalidArgument,
	codes.NotFound:           skill.CodeNotFound,
	codes.PermissionDenied:   skill.CodePermissionDenied,
	codes.Unauthenticated:    skill.CodePermissionDenied,
	codes.FailedPrecondition: skill.CodeFailedPrecondition,
	codes.AlreadyExists:      skill.CodeFailedPrecondition,
	codes.Aborted:            skill.CodeFailedPrecondition,
	codes.Unavailable:        skill.CodeUnavailable,
	codes.ResourceExhausted:  skill.CodeResourceExhausted,
	codes.Unimplemented:      skill.CodeUnimplemented,
	codes.Internal:           skill.CodeInternal,
	codes.Unknown:            skill.CodeInternal,
	codes.DataLoss:           skill.CodeInternal,
}

// fromStatus turns an error of a gRPC call into a domain error. When the
// caller's context ended, its error is returned as is, as the Router
// contract asks; so are deadline and cancellation statuses. A BadRequest
// field violation gives Field and Message, ErrorInfo gives Reason, RetryInfo
// adds the delay to the message. Transport failures keep their text (which
// may name addresses or socket paths) only in the wrapped cause.
func fromStatus(ctx context.Context, err error) error {
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
	code, ok := domainCodes[st.Code()]
	if !ok {
		code = skill.CodeInternal
	}
	de := &skill.Error{Code: code, Message: st.Message(), Err: err}
	switch {
	case st.Code() == codes.Unauthenticated:
		de.Message = "the router refused the credentials: " + st.Message()
	case st.Code() == codes.Unavailable && transportFailure(st.Message()):
		de.Message = "cannot reach the router"
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

// int32Of refuses a number the API's 32-bit field cannot carry; the
// remote router would see a different number.
func int32Of(field string, v int) (int32, error) {
	if v < -1<<31 || v > 1<<31-1 {
		return 0, skill.InvalidArgument(field, "%d is out of range", v)
	}
	return int32(v), nil
}
