package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// DenyReason says why a script may not run.
type DenyReason string

// Deny reasons, in the order AuthorizeExec checks them.
const (
	DenyExecDisabled   DenyReason = "exec_disabled"   // feature flag skills_exec is off
	DenyNotFound       DenyReason = "not_found"       // no such skill or script
	DenySkillDisabled  DenyReason = "skill_disabled"  // disabled in registry.json
	DenyPathEscape     DenyReason = "path_escape"     // the path leaves the skill folder
	DenyNotAllowlisted DenyReason = "not_allowlisted" // no ALLOWLIST.txt entry (or an untrusted skill's entry is unpinned)
	DenyHashMismatch   DenyReason = "hash_mismatch"   // the content differs from the pinned sha256
)

// ExecRequest asks whether a skill's script may run.
type ExecRequest struct {
	Skill, Script, Caller, Agent string
	// Principal and Peer identify the authenticated client, for the audit
	// record.
	Principal, Peer string
}

// ExecDecision answers an ExecRequest.
type ExecDecision struct {
	Allowed bool
	Reason  DenyReason // empty when allowed
	Message string
	// ScriptSHA256 is the hash of the script as it is now, when it could
	// be read.
	ScriptSHA256 string
	// DecisionID names the decision in the audit log and in
	// ReportExecResult.
	DecisionID string
}

// ExecReport is the outcome of a run the caller performed.
type ExecReport struct {
	DecisionID, Skill, Script, Caller, Principal string
	ExitCode                                     int
	Duration                                     time.Duration
	Error                                        string
}

// maxScriptBytes caps scripts hashed for a decision.
const maxScriptBytes = 16 << 20

// decisions remembers recent allow decisions so ReportExecResult can match
// them; it is bounded and entries expire.
type decisions struct {
	mu    sync.Mutex
	byID  map[string]decisionRecord
	order []string
}

type decisionRecord struct {
	skill, script string
	at            time.Time
}

const (
	maxDecisions = 10000
	decisionTTL  = 24 * time.Hour
)

func (d *decisions) add(id string, r decisionRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]decisionRecord{}
	}
	d.byID[id] = r
	d.order = append(d.order, id)
	for len(d.order) > maxDecisions || (len(d.order) > 0 && time.Since(d.byID[d.order[0]].at) > decisionTTL) {
		delete(d.byID, d.order[0])
		d.order = d.order[1:]
	}
}

func (d *decisions) get(id string) (decisionRecord, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.byID[id]
	return r, ok && time.Since(r.at) <= decisionTTL
}

// AuthorizeExec decides whether a skill's script may run, and records the
// decision (audit event skill_exec_attempt and a log line). It never runs
// anything. A script may run when skills_exec is on, the skill is visible to
// the agent and enabled, the path is a regular file inside the skill folder,
// and ALLOWLIST.txt lists it, with a matching sha256 when pinned (a pin is
// required for untrusted skills). Malformed requests are errors; every other
// outcome is a decision.
func (e *Engine) AuthorizeExec(ctx context.Context, req ExecRequest) (*ExecDecision, error) {
	if err := checkName(req.Skill); err != nil {
		return nil, skill.InvalidArgument("skill", "%v", err.(*skill.Error).Message)
	}
	if req.Script == "" {
		return nil, skill.InvalidArgument("script", "required: a path relative to the skill folder, such as scripts/run.py")
	}
	if err := checkAgent(req.Agent); err != nil {
		return nil, err
	}
	if _, err := e.Catalog(); err != nil {
		return nil, err
	}
	d := e.decideExec(req)
	d.DecisionID = newDecisionID()
	if d.Allowed {
		e.execs.add(d.DecisionID, decisionRecord{skill: req.Skill, script: req.Script, at: time.Now()})
	}
	decision := telemetry.DecisionAllow
	if !d.Allowed {
		decision = telemetry.DecisionDeny
	}
	e.rec.ExecAttempted(ctx, telemetry.ExecAttempt{
		DecisionID: d.DecisionID, Skill: req.Skill, Script: req.Script, Caller: req.Caller, Principal: req.Principal,
		Agent: req.Agent, Decision: decision, Reason: string(d.Reason), ScriptSHA256: d.ScriptSHA256, Peer: req.Peer,
	})
	return d, nil
}

func (e *Engine) decideExec(req ExecRequest) *ExecDecision {
	deny := func(r DenyReason, format string, args ...any) *ExecDecision {
		return &ExecDecision{Reason: r, Message: fmt.Sprintf(format, args...)}
	}
	if !e.Settings().Flags.SkillsExec {
		return deny(DenyExecDisabled, "script execution is off (feature flag skills_exec); an operator can turn it on in the config file")
	}
	cat, _ := e.Catalog()
	ent, ok := cat.Lookup(req.Skill, req.Agent)
	if !ok {
		return deny(DenyNotFound, "no skill named %q is visible to this caller", truncateForMessage(req.Skill))
	}
	s := ent.Skill
	if !s.Enabled() {
		return deny(DenySkillDisabled, "skill %q is %s", s.Name, loader.DisabledReason(s))
	}
	script, err := allowlist.CleanScript(req.Script)
	if err != nil {
		return deny(DenyPathEscape, "%v", err)
	}
	res, err := loader.ReadResource(s.Dir, script, maxScriptBytes)
	if err != nil {
		var de *skill.Error
		errors.As(err, &de)
		switch {
		case de != nil && de.Code == skill.CodePermissionDenied:
			return deny(DenyPathEscape, "%s", de.Message)
		case de != nil:
			return deny(DenyNotFound, "%s", de.Message)
		}
		return deny(DenyNotFound, "cannot read the script")
	}
	sum := sha256Hex(res.Data)
	list, err := e.allow.Load()
	if err != nil {
		e.log.Warn("allowlist unreadable; denying every script", "err", err)
		return &ExecDecision{Reason: DenyNotAllowlisted, ScriptSHA256: sum, Message: "the allowlist cannot be read; nothing may run until it is fixed"}
	}
	entry, ok := list.Lookup(s.Name, res.Path)
	switch {
	case !ok:
		return &ExecDecision{Reason: DenyNotAllowlisted, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s of %s is not in %s", res.Path, s.Name, e.displayPath(e.allow.Path))}
	case entry.SHA256 == "" && !s.Trusted():
		return &ExecDecision{Reason: DenyNotAllowlisted, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s is a %s (untrusted) skill: its allowlist entry must pin sha256:%s", s.Name, s.Root.Kind, sum)}
	case entry.SHA256 != "" && entry.SHA256 != sum:
		return &ExecDecision{Reason: DenyHashMismatch, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s changed since it was approved: sha256 is %s, the allowlist pins %s", res.Path, sum, entry.SHA256)}
	}
	return &ExecDecision{Allowed: true, ScriptSHA256: sum, Message: fmt.Sprintf("allowed by %s line %d", e.displayPath(e.allow.Path), entry.Line)}
}

// ReportExecResult records the outcome of a run that AuthorizeExec allowed
// (audit event skill_exec_result).
func (e *Engine) ReportExecResult(ctx context.Context, r ExecReport) error {
	if r.DecisionID == "" {
		return skill.InvalidArgument("decision_id", "required: the decision_id AuthorizeExec returned")
	}
	rec, ok := e.execs.get(r.DecisionID)
	if !ok {
		return skill.Errorf(skill.CodeNotFound, "no allow decision %q is pending (unknown, denied or expired); call AuthorizeExec first", truncateForMessage(r.DecisionID))
	}
	if (r.Skill != "" && r.Skill != rec.skill) || (r.Script != "" && r.Script != rec.script) {
		return skill.InvalidArgument("decision_id", "decision %s was for %s %s, not %s %s", r.DecisionID, rec.skill, rec.script, r.Skill, r.Script)
	}
	errClass := ""
	switch {
	case r.Error != "":
		errClass = "error"
	case r.ExitCode != 0:
		errClass = "nonzero_exit"
	}
	e.rec.ExecReported(ctx, telemetry.ExecResult{
		DecisionID: r.DecisionID, Skill: rec.skill, Script: rec.script, Caller: r.Caller, Principal: r.Principal,
		ExitCode: r.ExitCode, Duration: r.Duration, ErrorClass: errClass,
	})
	return nil
}

func newDecisionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}
