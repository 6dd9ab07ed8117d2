package engine

import (
	"fmt"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// Status describes the engine for operators.
type Status struct {
	Version   string
	StartedAt time.Time
	Serving   bool

	Generation uint64
	// Skills counts the skills served to callers without an agent.
	Skills, Disabled, Hidden, Shadowed, AgentScoped int
	// FilesInvalid counts SKILL.md files skipped because they never parsed.
	FilesInvalid int
	Agents       []string
	Shadows      []loader.Shadow

	// LastReindex is when the last pass ran; LastStats describe the pass
	// that built the current generation.
	LastReindex      time.Time
	LastStats        loader.Stats
	LastReindexError string
	Progress         loader.Progress
	// ParsedTotal counts files parsed since start.
	ParsedTotal int64

	Errors, Warnings int
	ProblemsByCode   map[string]int

	Flags  Flags
	Config ConfigState

	// Model is the embedding model's state; nil when embeddings are off.
	Model *embed.Status
	// VectorsCached counts the model's vectors in the cache.
	VectorsCached int
	// Degraded is set when matching uses keywords only.
	Degraded       bool
	DegradedReason string
}

// ConfigState describes the configuration file in force.
type ConfigState struct {
	Path     string
	LoadedAt time.Time
	// Error is the last rejected edit, empty when the file on disk is the
	// one in force.
	Error string
}

// SetConfigState records the state of the configuration file for Status.
func (e *Engine) SetConfigState(c ConfigState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.configState = c
}

// Status reports the current generation, the last reindex and validation.
func (e *Engine) Status() Status {
	st := Status{
		Version:     e.cfg.Version,
		StartedAt:   e.started,
		Flags:       e.Settings().Flags,
		Progress:    e.ix.Progress(),
		ParsedTotal: e.ix.ParsedTotal(),
	}
	e.mu.Lock()
	st.LastReindex, st.LastStats = e.lastReindex, e.lastStats
	st.Config = e.configState
	e.mu.Unlock()
	e.modelStatus(&st)
	e.mu.Lock()
	if e.lastErr != nil {
		st.LastReindexError = e.lastErr.Error()
	}
	e.mu.Unlock()

	g := e.current.Load()
	if g == nil {
		return st
	}
	cat := g.cat
	st.Serving = true
	st.Generation = cat.Generation
	st.FilesInvalid = cat.Invalid
	st.Agents = cat.Agents()
	st.Shadows = cat.Shadowed("*")
	st.Shadowed = len(st.Shadows)
	for _, s := range cat.Visible("") {
		switch {
		case !s.Enabled():
			st.Disabled++
		case s.Frontmatter.Hidden:
			st.Hidden++
		default:
			st.Skills++
		}
	}
	for _, ent := range cat.Entries() {
		if ent.Skill.Root.Agent != "" && ent.ShadowedBy == nil {
			st.AgentScoped++
		}
	}
	st.ProblemsByCode = map[string]int{}
	for _, p := range cat.Problems {
		st.ProblemsByCode[p.Code]++
		if p.Severity == skill.SeverityError {
			st.Errors++
		} else {
			st.Warnings++
		}
	}
	return st
}

// indexSize feeds the index gauge.
func (e *Engine) indexSize() telemetry.IndexSize {
	st := e.Status()
	return telemetry.IndexSize{
		Served: int64(st.Skills), Disabled: int64(st.Disabled), Shadowed: int64(st.Shadowed),
		AgentScoped: int64(st.AgentScoped), Invalid: int64(st.FilesInvalid),
	}
}

// modelStatus fills the embedding fields of a Status.
func (e *Engine) modelStatus(st *Status) {
	m := e.cfg.Embedder
	if m == nil {
		st.Degraded, st.DegradedReason = true, "embeddings are off; matching uses keywords only"
		return
	}
	ms := m.Status()
	st.Model = &ms
	if ms.Degraded {
		st.Degraded = true
		st.DegradedReason = fmt.Sprintf("%s: %s; matching uses keywords only until a valid model is available", ms.Reason, ms.Detail)
		return
	}
	st.VectorsCached, _ = e.db.VectorCount(ms.Identity.Fingerprint)
}
