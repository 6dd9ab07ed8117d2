package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
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

// status converts a domain error to a gRPC status error. Invalid arguments
// carry a BadRequest field violation; errors with a reason carry ErrorInfo.
// Context errors keep their meaning (deadline, cancellation). Internal errors
// (not *skill.Error, or CodeInternal) are logged once with a new request id,
// and the client gets only that id: their text may name host paths.
func (s *Service) status(ctx context.Context, err error) error {
	return toStatus(err, func(err error) string {
		method, _ := grpc.Method(ctx)
		id := newRequestID()
		logger(s.Logger).ErrorContext(ctx, "internal error", "request_id", id, "method", method, "err", err)
		return id
	})
}

// toStatus converts err; logInternal logs an internal error and returns the
// request id to quote.
func toStatus(err error, logInternal func(error) string) error {
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
		return internalError(logInternal(err))
	}
	code, ok := grpcCodes[de.Code]
	if !ok {
		code = codes.Unknown
	}
	msg := de.Message // never the wrapped cause: it may name host paths
	if de.Field != "" {
		msg = de.Field + ": " + msg
	}
	st := status.New(code, msg)
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

// internalError is the answer to an internal error: the request id under
// which the router logged the details, nothing else.
func internalError(requestID string) error {
	return status.Errorf(codes.Internal, "internal error (request id %s); the router logged the details", requestID)
}

// newRequestID returns a random id that names one internal error in the log.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
