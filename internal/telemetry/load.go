package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpsag/router/internal/skill"
)

// Load describes one served Load, for SkillLoaded. It carries counts, never
// the content.
type Load struct {
	// Skill is the resolved skill name.
	Skill  string
	Source skill.SourceKind
	Agent  string
	Level  skill.LoadLevel
	// Path is SKILL.md's path relative to its root (skill.Skill.RelPath)
	// for levels 1 and 2, and the resource path relative to the skill
	// folder for level 3. Never an absolute host path.
	Path string
	// Tokens is the estimated token count served; TotalTokens that of the
	// whole body; Budget the token budget applied (level 2).
	Tokens, TotalTokens, Budget int
	Truncated                   bool
	Latency                     time.Duration
}

// SkillLoaded records a successful Load: event skill_loaded and the loads,
// load duration, tokens and truncations metrics, by level. Call it once per
// Load reply; at level 3 call ResourceRequested as well.
func (r *Recorder) SkillLoaded(ctx context.Context, l Load) {
	if r == nil {
		return
	}
	level := l.Level.String()
	r.loads.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keyLevel, level),
		attribute.String(keySkill, l.Skill),
		attribute.Bool(keyTruncated, l.Truncated)))
	r.loadDuration.Record(ctx, l.Latency.Seconds(), metric.WithAttributes(attribute.String(keyLevel, level)))
	if l.Tokens > 0 {
		r.loadTokens.Add(ctx, int64(l.Tokens), metric.WithAttributes(attribute.String(keyLevel, level)))
	}
	if l.Truncated {
		r.truncations.Add(ctx, 1, metric.WithAttributes(attribute.String(keySkill, l.Skill)))
	}
	r.emit(ctx, r.events, EventSkillLoaded, otellog.SeverityInfo, false, []attribute.KeyValue{
		attribute.String(keySkill, l.Skill),
		attribute.String(keySource, string(l.Source)),
		attribute.String(keyAgent, clip(l.Agent)),
		attribute.String(keyLevel, level),
		attribute.String(keyPath, clip(l.Path)),
		attribute.Int("tokens", l.Tokens),
		attribute.Int("tokens.total", l.TotalTokens),
		attribute.Int("tokens.budget", l.Budget),
		attribute.Bool(keyTruncated, l.Truncated),
		attribute.Float64(keyDurationMS, ms(l.Latency)),
	})
}

// ResourceRequest describes one level-3 request, allowed or not, for
// ResourceRequested.
type ResourceRequest struct {
	// Skill is the resolved skill name, or "" when no such skill exists
	// (the requested name is then not recorded, to bound cardinality).
	Skill string
	Agent string
	// Resource is the requested path, relative to the skill folder, as the
	// client sent it (clipped to 256 bytes).
	Resource string
	// Bytes is the size served; 0 when denied.
	Bytes   int64
	Allowed bool
	// DenyReason is a stable code when Allowed is false: path_escape,
	// not_found, not_regular, too_large, ...
	DenyReason string
}

// ResourceRequested records a level-3 resource request: event
// skill_resource_requested, the resource requests counter (by allowed and
// reason) and bytes served. Call it for every level-3 request, including
// those the resolver denied.
func (r *Recorder) ResourceRequested(ctx context.Context, q ResourceRequest) {
	if r == nil {
		return
	}
	reason := ""
	if !q.Allowed {
		reason = clip(q.DenyReason)
		if reason == "" {
			reason = "denied"
		}
	}
	r.resRequests.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keySkill, q.Skill),
		attribute.Bool(keyAllowed, q.Allowed),
		attribute.String(keyReason, reason)))
	if q.Allowed && q.Bytes > 0 {
		r.resServed.Add(ctx, q.Bytes, metric.WithAttributes(attribute.String(keySkill, q.Skill)))
	}
	attrs := []attribute.KeyValue{
		attribute.String(keySkill, q.Skill),
		attribute.String(keyAgent, clip(q.Agent)),
		attribute.String(keyResource, clip(q.Resource)),
		attribute.Int64("bytes", q.Bytes),
		attribute.Bool(keyAllowed, q.Allowed),
	}
	if !q.Allowed {
		attrs = append(attrs, attribute.String("deny.reason", reason))
	}
	r.emit(ctx, r.events, EventResourceRequested, otellog.SeverityInfo, false, attrs)
}
