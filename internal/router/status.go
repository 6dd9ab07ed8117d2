package router

import (
	"context"
	"maps"

	"github.com/mcpsag/router/internal/skill"
)

// Status reports the served generation, the builds (progress, the last one,
// validation), the embedding model and the MCP servers.
func (r *Router) Status(context.Context) (*skill.Status, error) {
	// The generation first: a build records its stats before it publishes,
	// so the stats read next are those of g's build or a later one.
	g := r.current.Load()
	st := &skill.Status{
		Version:   r.cfg.Version,
		StartedAt: r.started,
		Flags:     r.Settings().Flags,
	}
	r.cfg.Source.Describe(st)
	r.mu.Lock()
	st.Config = r.configState
	r.mu.Unlock()
	r.hostPaths.hide(st)
	if up := r.cfg.Upstream; up != nil {
		st.Servers = up.Servers()
	}

	if g == nil {
		return st, nil
	}
	cat := g.Catalog
	st.Serving = true
	st.Generation, st.GenerationID = g.ID, g.ContentID
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
