package telemetry

// ScopeName is the instrumentation scope of the router's own telemetry.
const ScopeName = "github.com/mcpsag/router"

// AuditScopeName is the instrumentation scope of audit log records, so a
// collector can route them to their own stream.
const AuditScopeName = "github.com/mcpsag/router/audit"

// Event names: the EventName of each OTel log record the Recorder emits.
const (
	EventSkillSelected     = "skill_selected"
	EventSkillLoaded       = "skill_loaded"
	EventResourceRequested = "skill_resource_requested"
	EventExecAttempt       = "skill_exec_attempt"
	EventExecResult        = "skill_exec_result"
	EventEmbeddingFallback = "skill_embedding_fallback"
	EventReindexed         = "skill_reindexed"
	EventAdminCall         = "admin_call"
	EventMCPCall           = "mcp_call"
	EventAuthFailure       = "auth_failure"
	EventToolCall          = "tool_call"
)

// Metric names (OTel form). The Prometheus form, as served on /metrics and
// produced by an OTLP-to-Prometheus pipeline with the same translation
// strategy, is in the comment.
const (
	MetricMatchDuration     = "skillrouter.match.duration"         // skillrouter_match_duration_seconds_{bucket,sum,count}
	MetricMatchCandidates   = "skillrouter.match.candidates"       // skillrouter_match_candidates_{bucket,sum,count}
	MetricMatchAbstentions  = "skillrouter.match.abstentions"      // skillrouter_match_abstentions_total
	MetricMatchSelections   = "skillrouter.match.selections"       // skillrouter_match_selections_total
	MetricLoads             = "skillrouter.loads"                  // skillrouter_loads_total
	MetricLoadDuration      = "skillrouter.load.duration"          // skillrouter_load_duration_seconds_{bucket,sum,count}
	MetricLoadTokens        = "skillrouter.load.tokens"            // skillrouter_load_tokens_total
	MetricLoadTruncations   = "skillrouter.load.truncations"       // skillrouter_load_truncations_total
	MetricResourceRequests  = "skillrouter.resource.requests"      // skillrouter_resource_requests_total
	MetricResourceServed    = "skillrouter.resource.served"        // skillrouter_resource_served_bytes_total
	MetricExecDecisions     = "skillrouter.exec.decisions"         // skillrouter_exec_decisions_total
	MetricExecResults       = "skillrouter.exec.results"           // skillrouter_exec_results_total
	MetricExecDuration      = "skillrouter.exec.duration"          // skillrouter_exec_duration_seconds_{bucket,sum,count}
	MetricEmbedFallbacks    = "skillrouter.embed.fallbacks"        // skillrouter_embed_fallbacks_total
	MetricEmbedCacheHits    = "skillrouter.embed.cache.hits"       // skillrouter_embed_cache_hits_total
	MetricEmbedCacheMisses  = "skillrouter.embed.cache.misses"     // skillrouter_embed_cache_misses_total
	MetricIndexSkills       = "skillrouter.index.skills"           // skillrouter_index_skills
	MetricEmbedBacklog      = "skillrouter.embed.backlog"          // skillrouter_embed_backlog
	MetricEmbedServed       = "skillrouter.embed.served"           // skillrouter_embed_served_ratio (unit 1)
	MetricReady             = "skillrouter.ready"                  // skillrouter_ready
	MetricDegraded          = "skillrouter.degraded"               // skillrouter_degraded
	MetricUpstreamServers   = "skillrouter.upstream.servers"       // skillrouter_upstream_servers
	MetricReindexDuration   = "skillrouter.index.reindex.duration" // skillrouter_index_reindex_duration_seconds_{bucket,sum,count}
	MetricAdminCalls        = "skillrouter.admin.calls"            // skillrouter_admin_calls_total
	MetricMCPCalls          = "skillrouter.mcp.calls"              // skillrouter_mcp_calls_total
	MetricAuthFailures      = "skillrouter.auth.failures"          // skillrouter_auth_failures_total
	MetricToolCalls         = "skillrouter.tool.calls"             // skillrouter_tool_calls_total
	MetricToolCallDuration  = "skillrouter.tool.call.duration"     // skillrouter_tool_call_duration_seconds_{bucket,sum,count}
	MetricRPCServerDuration = "rpc.server.call.duration"           // rpc_server_call_duration_seconds_{bucket,sum,count} (otelgrpc)
)

// Attribute keys shared by log records and metrics. In Prometheus, dots
// become underscores (error.type -> error_type).
const (
	keySkill         = "skill"
	keySource        = "source"
	keyAgent         = "agent"
	keyLevel         = "level"
	keyPath          = "path"
	keyResource      = "resource"
	keyTruncated     = "truncated"
	keyAllowed       = "allowed"
	keyReason        = "reason"
	keyDecision      = "decision"
	keyOutcome       = "outcome"
	keyErrorType     = "error.type"
	keyCache         = "cache"
	keyState         = "state"
	keyTier          = "tier"
	keyModel         = "model"
	keyFull          = "full"
	keyMode          = "mode"
	keyDegraded      = "degraded"
	keyMethod        = "method"
	keyLogType       = "log.type"
	keyTransport     = "transport"
	keyDurationMS    = "duration_ms"
	keyTaskHash      = "task.hash"
	keyTaskChars     = "task.chars"
	keyTaskText      = "task.text"
	keyCandidates    = "candidates"
	keyCandidateN    = "candidates.count"
	keyAbstained     = "abstained"
	keyAbstainReason = "abstain.reason"
)
