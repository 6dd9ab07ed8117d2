// Package skillpb maps the domain (internal/skill) onto the gRPC API's
// messages (routerv1) and back. The server takes requests in and sends
// results out, the remote client sends requests out and takes results in:
// each mapping here has its inverse beside it, both made from one table
// where they can be, and a fuzzed round trip (FuzzRoundTrip) holds every
// pair to each other. Proto types go no further than the fronts that use
// this package.
package skillpb

import (
	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// twoWay is a table between domain values and the proto enum values that
// carry them, read both ways. A value it does not hold reads as the zero
// value of the other side.
type twoWay[D, P comparable] struct {
	toPB   map[D]P
	fromPB map[P]D
}

// table makes the two-way table of pairs; no two pairs may share a value
// on either side.
func table[D, P comparable](pairs map[D]P) twoWay[D, P] {
	t := twoWay[D, P]{toPB: pairs, fromPB: make(map[P]D, len(pairs))}
	for d, p := range pairs {
		if _, dup := t.fromPB[p]; dup {
			panic("skillpb: two domain values map to one proto value")
		}
		t.fromPB[p] = d
	}
	return t
}

var (
	sourceKinds = table(map[skill.SourceKind]routerv1.SourceKind{
		skill.KindProject: routerv1.SourceKind_SOURCE_KIND_PROJECT,
		skill.KindUser:    routerv1.SourceKind_SOURCE_KIND_USER,
		skill.KindLearned: routerv1.SourceKind_SOURCE_KIND_LEARNED,
		skill.KindBundled: routerv1.SourceKind_SOURCE_KIND_BUNDLED,
		skill.KindServer:  routerv1.SourceKind_SOURCE_KIND_MCP_SERVER,
	})
	kindFilters = table(map[skill.KindFilter]routerv1.KindFilter{
		"":                routerv1.KindFilter_KIND_FILTER_UNSPECIFIED,
		skill.KindsBoth:   routerv1.KindFilter_KIND_FILTER_BOTH,
		skill.KindsSkills: routerv1.KindFilter_KIND_FILTER_SKILLS,
		skill.KindsTools:  routerv1.KindFilter_KIND_FILTER_TOOLS,
	})
	modes = table(map[skill.MatchMode]routerv1.MatchMode{
		"":                routerv1.MatchMode_MATCH_MODE_UNSPECIFIED,
		skill.ModeHybrid:  routerv1.MatchMode_MATCH_MODE_HYBRID,
		skill.ModeDense:   routerv1.MatchMode_MATCH_MODE_DENSE,
		skill.ModeKeyword: routerv1.MatchMode_MATCH_MODE_BM25,
	})
	fusions = table(map[skill.Fusion]routerv1.Fusion{
		"":                   routerv1.Fusion_FUSION_UNSPECIFIED,
		skill.FusionTiebreak: routerv1.Fusion_FUSION_TIEBREAK,
		skill.FusionRRF:      routerv1.Fusion_FUSION_RRF,
		skill.FusionConvex:   routerv1.Fusion_FUSION_CONVEX,
		skill.FusionAdaptive: routerv1.Fusion_FUSION_ADAPTIVE,
	})
	abstainReasons = table(map[skill.AbstainReason]routerv1.AbstainReason{
		skill.AbstainBelowThreshold: routerv1.AbstainReason_ABSTAIN_REASON_BELOW_THRESHOLD,
		skill.AbstainCalibrated:     routerv1.AbstainReason_ABSTAIN_REASON_CALIBRATED,
		skill.AbstainDisabled:       routerv1.AbstainReason_ABSTAIN_REASON_DISABLED,
		skill.AbstainNoSkills:       routerv1.AbstainReason_ABSTAIN_REASON_NO_SKILLS,
		skill.AbstainNoMatch:        routerv1.AbstainReason_ABSTAIN_REASON_NO_MATCH,
		skill.AbstainNoTools:        routerv1.AbstainReason_ABSTAIN_REASON_NO_TOOLS,
	})
	verdicts = table(map[skill.Verdict]routerv1.MatchVerdict{
		skill.VerdictConfident:     routerv1.MatchVerdict_MATCH_VERDICT_CONFIDENT,
		skill.VerdictLowConfidence: routerv1.MatchVerdict_MATCH_VERDICT_LOW_CONFIDENCE,
		skill.VerdictNoSkill:       routerv1.MatchVerdict_MATCH_VERDICT_NO_SKILL,
	})
	denyReasons = table(map[skill.DenyReason]routerv1.ExecDenyReason{
		skill.DenyExecDisabled:   routerv1.ExecDenyReason_EXEC_DENY_REASON_EXEC_DISABLED,
		skill.DenyNotAllowlisted: routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_ALLOWLISTED,
		skill.DenyHashMismatch:   routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH,
		skill.DenyPathEscape:     routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE,
		skill.DenyNotFound:       routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND,
		skill.DenySkillDisabled:  routerv1.ExecDenyReason_EXEC_DENY_REASON_SKILL_DISABLED,
	})
	serverStates = table(map[skill.ServerState]routerv1.ServerState{
		skill.ServerDisabled: routerv1.ServerState_SERVER_STATE_DISABLED,
		skill.ServerStarting: routerv1.ServerState_SERVER_STATE_STARTING,
		skill.ServerReady:    routerv1.ServerState_SERVER_STATE_READY,
		skill.ServerFailed:   routerv1.ServerState_SERVER_STATE_FAILED,
		skill.ServerStopped:  routerv1.ServerState_SERVER_STATE_STOPPED,
	})
)

// trustPB carries trusted.
func trustPB(trusted bool) routerv1.Trust {
	if trusted {
		return routerv1.Trust_TRUST_TRUSTED
	}
	return routerv1.Trust_TRUST_UNTRUSTED
}

// trusted is the inverse of trustPB.
func trusted(t routerv1.Trust) bool { return t == routerv1.Trust_TRUST_TRUSTED }

// severityPB carries a problem's severity: error, else warning.
func severityPB(s skill.Severity) routerv1.Severity {
	if s == skill.SeverityError {
		return routerv1.Severity_SEVERITY_ERROR
	}
	return routerv1.Severity_SEVERITY_WARNING
}

// severity is the inverse of severityPB.
func severity(s routerv1.Severity) skill.Severity {
	if s == routerv1.Severity_SEVERITY_ERROR {
		return skill.SeverityError
	}
	return skill.SeverityWarning
}

// entryKindPB says whether s is a skill or a tool.
func entryKindPB(s *skill.Skill) routerv1.EntryKind {
	if s.IsTool() {
		return routerv1.EntryKind_ENTRY_KIND_TOOL
	}
	return routerv1.EntryKind_ENTRY_KIND_SKILL
}
