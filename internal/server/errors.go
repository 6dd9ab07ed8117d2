package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mcpsag/router/internal/skillpb"
)

// status converts a domain error to a gRPC status error (skillpb.StatusOf,
// where the table of codes is). An internal error is logged once with a
// new request id, and the client gets only that id: its text may name host
// paths.
func (s *Service) status(ctx context.Context, err error) error {
	return skillpb.StatusOf(err, func(err error) string {
		method, _ := grpc.Method(ctx)
		id := newRequestID()
		logger(s.Logger).ErrorContext(ctx, "internal error", "request_id", id, "method", method, "err", err)
		return id
	})
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
