package skill

import (
	"errors"
	"fmt"
)

// Code classifies an error for callers. The server maps each code to one gRPC
// status code; the CLI maps it to an exit status.
type Code int

// Error codes.
const (
	CodeUnknown            Code = iota
	CodeInvalidArgument         // the request is malformed; Field says which part
	CodeNotFound                // no such skill, resource or agent
	CodePermissionDenied        // the request is well formed but not allowed
	CodeFailedPrecondition      // the target exists but is unusable as asked (too large, not a regular file)
	CodeUnavailable             // the router is not ready (no index yet, draining)
	CodeResourceExhausted       // a limit was hit; retry later
	CodeUnimplemented           // the feature has not been built yet
	CodeInternal                // a bug or a broken invariant
)

var codeNames = map[Code]string{
	CodeUnknown:            "unknown",
	CodeInvalidArgument:    "invalid_argument",
	CodeNotFound:           "not_found",
	CodePermissionDenied:   "permission_denied",
	CodeFailedPrecondition: "failed_precondition",
	CodeUnavailable:        "unavailable",
	CodeResourceExhausted:  "resource_exhausted",
	CodeUnimplemented:      "unimplemented",
	CodeInternal:           "internal",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// Error is an error with a Code, an optional request field and a stable
// machine-readable Reason (such as "RESOURCE_TOO_LARGE").
type Error struct {
	Code    Code
	Field   string // request field at fault, for CodeInvalidArgument and some refusals
	Reason  string // stable UPPER_SNAKE identifier, optional
	Message string // what went wrong and what to do about it
	Err     error  // wrapped cause, optional
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidArgument returns a CodeInvalidArgument error about one request field.
func InvalidArgument(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// WithField sets the request field at fault and returns the error: for
// codes other than CodeInvalidArgument (InvalidArgument sets it), a field
// that is well formed but refused.
func (e *Error) WithField(field string) *Error {
	e.Field = field
	return e
}

// WithReason sets the error's machine-readable reason and returns it.
func (e *Error) WithReason(reason string) *Error {
	e.Reason = reason
	return e
}

// ErrorCode returns the Code of the first *Error in err's chain, CodeInternal
// for other non-nil errors, and CodeUnknown for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return CodeUnknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
