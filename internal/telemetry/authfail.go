package telemetry

import (
	"context"

	"github.com/mcpsag/router/internal/auth"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
)

// AuthFailed records failed authentication: the auth failures counter (by
// reason) on every call, and audit event auth_failure when f.Audit is set.
func (r *Recorder) AuthFailed(ctx context.Context, f auth.AuthFailure) {
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
