package router

import (
	"cmp"
	"context"
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/skill"
)

// List returns the skills agent sees, sorted by name, paged: at most the
// page size, fewer when their text passes listPageBytes. Disabled and
// hidden skills are left out unless asked for. The page token is opaque: it
// encodes the last name returned, so pages stay consistent across
// generations.
func (r *Router) List(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	size := cmp.Or(req.PageSize, skill.DefaultPageSize)
	after := ""
	if req.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		if err != nil || !strings.HasPrefix(string(b), "after:") {
			return nil, skill.InvalidArgument(skill.FieldPageToken, "not a token this server issued; pass next_page_token from the previous reply")
		}
		after = strings.TrimPrefix(string(b), "after:")
	}
	g, err := r.generation()
	if err != nil {
		return nil, err
	}
	scope := skill.ScopeFrom(ctx)
	var all []*skill.Skill
	for _, s := range g.Catalog.Visible(req.Agent) {
		if (!req.IncludeDisabled && !s.Enabled()) || (!req.IncludeHidden && s.Frontmatter.Hidden) ||
			!req.Kinds.Allows(s) || !scope.Allows(s) {
			continue
		}
		all = append(all, s)
	}
	res := &skill.ListResult{Total: len(all), Shadowed: g.Catalog.Shadowed(req.Agent), Generation: g.ID}
	start, _ := slices.BinarySearchFunc(all, after, func(s *skill.Skill, name string) int { return strings.Compare(s.Name, name) })
	if after != "" && start < len(all) && all[start].Name == after {
		start++
	}
	end := min(start+size, len(all))
	end = start + pageFits(all[start:end], listPageBytes)
	res.Skills = all[start:end]
	if end < len(all) {
		res.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte("after:" + all[end-1].Name))
	}
	if req.CatalogBudget > 0 {
		res.Catalog = catalog.Render(all, req.CatalogBudget)
	}
	return res, nil
}

// listPageBytes bounds the text of the skills one page of List carries, a
// quarter of what a reply may be: a page of a thousand skills whose
// descriptions each fill their frontmatter would not fit in a message, and
// would fail the listing for every client. A page that reaches it ends
// early; the next page token goes on from there.
const listPageBytes = 4 << 20

// pageFits returns how many of skills, from the first, a page carries
// within budget bytes of their text: at least one.
func pageFits(skills []*skill.Skill, budget int) int {
	used := 0
	for i, s := range skills {
		used += len(s.Name) + len(s.Description()) + len(s.RelPath) + len(s.Root.Display) + 64
		for _, t := range s.Tags() {
			used += len(t) + 2
		}
		if used > budget && i > 0 {
			return i
		}
	}
	return len(skills)
}

// Get returns the copy of a skill agent sees, with its precedence entry, or
// a tool by name; with req.Manifest, also the skill's manifest.
func (r *Router) Get(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	g, ent, err := r.lookup(ctx, req.Name, req.Agent)
	if err != nil {
		return nil, err
	}
	res := &skill.GetResult{Entry: r.withDisplayPaths(ent), Generation: g.ID}
	if req.Manifest {
		if res.Manifest, err = g.Files.Manifest(ent.Skill, r.cfg.MaxResourceBytes); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// withDisplayPaths returns ent with the files its skill's problems name
// shown as displayPath shows them (relative to the workspace, or only
// their name), not as the host's paths. The catalog's skill is not
// changed: ent's is copied when a problem names a host path.
func (r *Router) withDisplayPaths(ent *skill.Entry) *skill.Entry {
	s := ent.Skill
	if !slices.ContainsFunc(s.Problems, func(p skill.Problem) bool { return filepath.IsAbs(p.File) }) {
		return ent
	}
	shown := *s
	shown.Problems = slices.Clone(s.Problems)
	for i, p := range shown.Problems {
		if filepath.IsAbs(p.File) {
			shown.Problems[i].File = r.displayPath(p.File)
		}
	}
	e := *ent
	e.Skill = &shown
	return &e
}

// lookup finds the skill agent sees under name in the served generation,
// else the tool of that name when the caller's scope includes its server.
func (r *Router) lookup(ctx context.Context, name, agent string) (*Generation, *skill.Entry, error) {
	g, err := r.generation()
	if err != nil {
		return nil, nil, err
	}
	if ent, ok := g.Catalog.Entry(name, agent, skill.ScopeFrom(ctx)); ok {
		return g, ent, nil
	}
	return nil, nil, r.notFound(g.Catalog, name)
}

// notFound explains a missing skill, naming a file that failed to parse under
// that name when there is one.
func (r *Router) notFound(cat *catalog.Catalog, name string) error {
	for _, p := range cat.Problems {
		if p.Severity == skill.SeverityError && strings.Contains(p.File, "/"+name+"/") {
			return skill.Errorf(skill.CodeNotFound, "no skill named %q is served: %s was skipped (%s); validate the file and fix it",
				name, r.displayPath(p.File), p.Message).WithReason(skill.ReasonSkillNotFound)
		}
	}
	return skill.Errorf(skill.CodeNotFound, "no skill named %q; list the skills to see the available names", skill.Clip(name, 40)).
		WithReason(skill.ReasonSkillNotFound)
}
