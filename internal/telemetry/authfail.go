package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
)

// Reasons in AuthFailure records.
const (
	// ReasonNoToken and ReasonBadToken are checked failures: a call without
	// a bearer token, or with one that matches no configured token.
	ReasonNoToken  = "no_token"
	ReasonBadToken = "bad_token"
	// ReasonClientLimited and ReasonGlobalLimited are refusals without a
	// check: the client's address, or all clients together, failed too
	// often.
	ReasonClientLimited = "client_limited"
	ReasonGlobalLimited = "global_limited"
)

// AuthFailure describes failed authentication, for AuthFailed.
type AuthFailure struct {
	// Peer is the client address the limit applies to (an IP address, or
	// an IPv6 /64 prefix).
	Peer   string
	Method string
	// Reason is one of the Reason constants above.
	Reason string
	// Audit asks for an audit record. Checked failures are always audited;
	// refusals are sampled (the first, then about one a minute per client)
	// so a flood cannot flood the audit stream.
	Audit bool
	// Unaudited is how many earlier refusals of the same client this
	// record stands for.
	Unaudited int
	// RetryAfter is the delay a refused client was given.
	RetryAfter time.Duration
}

// AuthFailed records failed authentication: the auth failures counter (by
// reason) on every call, and audit event auth_failure when f.Audit is set.
func (r *Recorder) AuthFailed(ctx context.Context, f AuthFailure) {
	if r == nil {
		return
	}
	r.authFailures.Add(ctx, 1, metric.WithAttributes(attribute.String(keyReason, clip(f.Reason))))
	if !f.Audit {
		return
	}
	r.emit(ctx, r.audit, EventAuthFailure, otellog.SeverityWarn, true, []attribute.KeyValue{
		attribute.String(keyMethod, clip(f.Method)),
		attribute.String(keyReason, clip(f.Reason)),
		attribute.String("client.address", clip(f.Peer)),
		attribute.Int("unaudited", f.Unaudited),
		attribute.Float64("retry_after_ms", ms(f.RetryAfter)),
	})
}
