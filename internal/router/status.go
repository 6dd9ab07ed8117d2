package router

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/mcpsag/router/internal/skill"
)

// Status reports the served generation, the last reindex, validation, the
// embedding model and the MCP servers.
func (r *Router) Status(context.Context) (*skill.Status, error) {
	// The generation first: a build records its stats before it publishes,
	// so the stats read next are those of g's build or a later one.
	g := r.current.Load()
	st := &skill.Status{
		Version:     r.cfg.Version,
		StartedAt:   r.started,
		Flags:       r.Settings().Flags,
		Progress:    r.builder.Progress(),
		ParsedTotal: r.builder.ParsedTotal(),
	}
	if !st.Progress.Running && r.watching.Load() {
		// After a start, the watches are added while the router serves
		// (seconds at 100,000 folders); edits are seen once they are.
		st.Progress = skill.Progress{Running: true, Phase: skill.PhaseWatch}
	}
	r.mu.Lock()
	st.LastReindex, st.LastStats, st.Config = r.lastReindex, r.lastStats, r.configState
	if r.lastErr != nil {
		st.LastReindexError = r.lastErr.Error()
	}
	r.mu.Unlock()
	r.modelStatus(st)
	if why := r.cfg.StoreDegraded; why != "" {
		st.Degraded = true
		st.DegradedReason = strings.TrimPrefix(st.DegradedReason+"; ", "; ") + why
	}
	if up := r.cfg.Upstream; up != nil {
		st.Servers = up.Servers()
	}

	if g == nil {
		return st, nil
	}
	cat := g.Catalog
	st.Serving = true
	st.Generation, st.GenerationID = g.ID, g.ContentID
	st.CatchingUp = r.catchingUp.Load()
	st.FilesInvalid = cat.Invalid
	st.Agents = cat.Agents()
	st.Shadows = cat.Shadowed("*")
	st.Shadowed = len(st.Shadows)
	n := cat.Counts()
	st.Skills, st.Disabled, st.Hidden, st.Tools = n.Skills, n.Disabled, n.Hidden, n.Tools
	st.AgentScoped = n.AgentScoped
	st.Errors, st.Warnings, st.ProblemsByCode = n.Errors, n.Warnings, maps.Clone(n.ProblemsByCode)
	return st, nil
}

// modelStatus fills the embedding fields of a Status.
func (r *Router) modelStatus(st *skill.Status) {
	m := r.builder.Config().Embedder
	if m == nil {
		st.Degraded, st.DegradedReason = true, "embeddings are off; matching uses keywords only"
		return
	}
	ms := m.Status()
	if ms.Degraded {
		st.Degraded = true
		st.DegradedReason = fmt.Sprintf("%s: %s; matching uses keywords only until a valid model is available", ms.Reason, ms.Detail)
		return
	}
	st.Model = &skill.ModelStatus{
		Name: ms.Identity.Name, Dimension: ms.Identity.Dimension, Fingerprint: ms.Identity.Fingerprint, Path: ms.Identity.Path,
		LoadDuration: ms.Load.LoadDuration, QueryLatency: ms.Load.QueryLatency,
		EmbeddingsComputed: ms.EmbeddingsComputed, MatchThreshold: ms.MatchThreshold,
	}
	st.Model.VectorsCached, _ = r.builder.VectorCount(ms.Identity.Fingerprint)
}
