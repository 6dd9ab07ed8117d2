package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

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

// AuthorizeExec decides whether a skill's script may run. It never runs
// anything. A script may run when skills_exec is on, the skill is visible to
// the agent and enabled, the path is a regular file inside the skill folder,
// and ALLOWLIST.txt lists it, with a matching sha256 when pinned (a pin is
// required for untrusted skills). Malformed requests are errors; every other
// outcome is a decision. Allow decisions are remembered (bounded, for a day)
// so ReportExecResult can match them.
func (r *Router) AuthorizeExec(_ context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	g, err := r.generation()
	if err != nil {
		return nil, err
	}
	d := r.decideExec(g, req)
	d.DecisionID = newID("exec-")
	if d.Allowed {
		r.execs.add(d.DecisionID, decisionRecord{skill: req.Skill, script: req.Script, at: time.Now()})
	}
	return d, nil
}

func (r *Router) decideExec(g *Generation, req skill.ExecRequest) *skill.ExecDecision {
	deny := func(reason skill.DenyReason, format string, args ...any) *skill.ExecDecision {
		return &skill.ExecDecision{Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	if !r.Settings().Flags.SkillsExec {
		return deny(skill.DenyExecDisabled, "script execution is off (feature flag skills_exec); an operator can turn it on in the config file")
	}
	ent, ok := g.Catalog.Lookup(req.Skill, req.Agent)
	if !ok {
		return deny(skill.DenyNotFound, "no skill named %q is visible to this caller", skill.Clip(req.Skill, 40))
	}
	s := ent.Skill
	if !s.Enabled() {
		return deny(skill.DenySkillDisabled, "skill %q is %s", s.Name, s.DisabledReason())
	}
	script, err := allowlist.CleanScript(req.Script)
	if err != nil {
		return deny(skill.DenyPathEscape, "%v", err)
	}
	res, err := skillfs.ReadResource(s.Dir, script, maxScriptBytes)
	if err != nil {
		var de *skill.Error
		errors.As(err, &de)
		switch {
		case de != nil && de.Code == skill.CodePermissionDenied:
			return deny(skill.DenyPathEscape, "%s", de.Message)
		case de != nil:
			return deny(skill.DenyNotFound, "%s", de.Message)
		}
		return deny(skill.DenyNotFound, "cannot read the script")
	}
	sum := skill.Hash(res.Data)
	list, err := r.allow.Load()
	if err != nil {
		r.log.Warn("allowlist unreadable; denying every script", "err", err)
		return &skill.ExecDecision{Reason: skill.DenyNotAllowlisted, ScriptSHA256: sum, Message: "the allowlist cannot be read; nothing may run until it is fixed"}
	}
	entry, ok := list.Lookup(s.Name, res.Path)
	switch {
	case !ok:
		return &skill.ExecDecision{Reason: skill.DenyNotAllowlisted, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s of %s is not in %s", res.Path, s.Name, r.displayPath(r.allow.Path))}
	case entry.SHA256 == "" && !s.Trusted():
		return &skill.ExecDecision{Reason: skill.DenyNotAllowlisted, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s is a %s (untrusted) skill: its allowlist entry must pin sha256:%s", s.Name, s.Root.Kind, sum)}
	case entry.SHA256 != "" && entry.SHA256 != sum:
		return &skill.ExecDecision{Reason: skill.DenyHashMismatch, ScriptSHA256: sum,
			Message: fmt.Sprintf("%s changed since it was approved: sha256 is %s, the allowlist pins %s", res.Path, sum, entry.SHA256)}
	}
	return &skill.ExecDecision{Allowed: true, ScriptSHA256: sum, Message: fmt.Sprintf("allowed by %s line %d", r.displayPath(r.allow.Path), entry.Line)}
}

// ReportExecResult checks a run's outcome against the allow decision it
// follows and returns the report as recorded: with the decision's skill and
// script.
func (r *Router) ReportExecResult(_ context.Context, rep skill.ExecReport) (*skill.ExecReport, error) {
	if err := rep.Validate(); err != nil {
		return nil, err
	}
	rec, ok := r.execs.get(rep.DecisionID)
	if !ok {
		return nil, skill.Errorf(skill.CodeNotFound, "no allow decision %q is pending (unknown, denied or expired); call AuthorizeExec first", skill.Clip(rep.DecisionID, 40))
	}
	if (rep.Skill != "" && rep.Skill != rec.skill) || (rep.Script != "" && rep.Script != rec.script) {
		return nil, skill.InvalidArgument(skill.FieldDecisionID, "decision %s was for %s %s, not %s %s", rep.DecisionID, rec.skill, rec.script, rep.Skill, rep.Script)
	}
	rep.Skill, rep.Script = rec.skill, rec.script
	return &rep, nil
}

// newID returns prefix and 24 random hex digits: a decision's id.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
