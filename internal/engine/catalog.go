package engine

import (
	"encoding/base64"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
)

// Request limits.
const (
	maxNameBytes    = 256
	defaultPageSize = 100
	maxPageSize     = 1000
	// maxCatalogBudget caps rendered catalogs (characters).
	maxCatalogBudget = 1 << 20
)

var agentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// checkAgent validates an agent name. The empty name is the global view. An
// agent without skills of its own is not an error: it sees the global skills.
func checkAgent(agent string) error {
	if agent != "" && !agentRE.MatchString(agent) {
		return skill.InvalidArgument("agent", "%q is not a valid agent name: %v", truncateForMessage(agent), errAgentSyntax)
	}
	return nil
}

func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return skill.InvalidArgument("name", "required: the skill's name, as ListSkills shows it")
	case len(name) > maxNameBytes:
		return skill.InvalidArgument("name", "%d bytes long; skill names are at most %d", len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return skill.InvalidArgument("name", "not valid UTF-8")
	}
	return nil
}

// displayPath shows a path relative to the workspace when it lies inside it,
// so replies do not reveal the host's layout.
func (e *Engine) displayPath(p string) string {
	if rel, err := filepath.Rel(e.cfg.Loader.Workspace, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(p)
}

func truncateForMessage(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "..."
}

// lookup finds the skill agent sees under name.
func (e *Engine) lookup(name, agent string) (*loader.Catalog, *loader.Entry, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	if err := checkAgent(agent); err != nil {
		return nil, nil, err
	}
	cat, err := e.Catalog()
	if err != nil {
		return nil, nil, err
	}
	ent, ok := cat.Lookup(name, agent)
	if !ok {
		return nil, nil, e.notFound(cat, name)
	}
	return cat, ent, nil
}

// notFound explains a missing skill, naming a file that failed to parse under
// that name when there is one.
func (e *Engine) notFound(cat *loader.Catalog, name string) error {
	for _, p := range cat.Problems {
		if p.Severity == skill.SeverityError && strings.Contains(p.File, "/"+name+"/") {
			return skill.Errorf(skill.CodeNotFound, "no skill named %q is served: %s was skipped (%s); run routerctl validate on it",
				name, e.displayPath(p.File), p.Message)
		}
	}
	return skill.Errorf(skill.CodeNotFound, "no skill named %q; routerctl list shows the available skills", truncateForMessage(name))
}

// ListRequest asks for a page of level-1 summaries.
type ListRequest struct {
	Agent           string
	PageSize        int
	PageToken       string
	IncludeHidden   bool
	IncludeDisabled bool
	// CatalogBudget, when positive, asks for a rendered catalog of at most
	// this many characters.
	CatalogBudget int
}

// ListResult is one page of skills.
type ListResult struct {
	Skills        []*skill.Skill
	NextPageToken string
	Total         int
	Catalog       *RenderedCatalog
	Shadowed      []loader.Shadow
	Generation    uint64
}

// ListSkills returns the skills agent sees, sorted by name, paged. Disabled
// and hidden skills are left out unless asked for. The page token is opaque:
// it encodes the last name returned, so pages stay consistent across
// generations.
func (e *Engine) ListSkills(req ListRequest) (*ListResult, error) {
	if err := checkAgent(req.Agent); err != nil {
		return nil, err
	}
	size := req.PageSize
	switch {
	case size < 0 || size > maxPageSize:
		return nil, skill.InvalidArgument("page_size", "%d is out of range; want 1 to %d, or 0 for %d", size, maxPageSize, defaultPageSize)
	case size == 0:
		size = defaultPageSize
	}
	if req.CatalogBudget < 0 || req.CatalogBudget > maxCatalogBudget {
		return nil, skill.InvalidArgument("catalog_char_budget", "%d is out of range; want 0 (no catalog) to %d", req.CatalogBudget, maxCatalogBudget)
	}
	after := ""
	if req.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		if err != nil || !strings.HasPrefix(string(b), "after:") {
			return nil, skill.InvalidArgument("page_token", "not a token this server issued; pass next_page_token from the previous reply")
		}
		after = strings.TrimPrefix(string(b), "after:")
	}
	cat, err := e.Catalog()
	if err != nil {
		return nil, err
	}
	var all []*skill.Skill
	for _, s := range cat.Visible(req.Agent) {
		if (!req.IncludeDisabled && !s.Enabled()) || (!req.IncludeHidden && s.Frontmatter.Hidden) {
			continue
		}
		all = append(all, s)
	}
	res := &ListResult{Total: len(all), Shadowed: cat.Shadowed(req.Agent), Generation: cat.Generation}
	start, _ := slices.BinarySearchFunc(all, after, func(s *skill.Skill, name string) int { return strings.Compare(s.Name, name) })
	if after != "" && start < len(all) && all[start].Name == after {
		start++
	}
	end := min(start+size, len(all))
	res.Skills = all[start:end]
	if end < len(all) {
		res.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte("after:" + all[end-1].Name))
	}
	if req.CatalogBudget > 0 {
		res.Catalog = RenderCatalog(all, req.CatalogBudget)
	}
	return res, nil
}

// GetSkill returns the copy of a skill agent sees, with its precedence entry.
func (e *Engine) GetSkill(name, agent string) (*loader.Entry, uint64, error) {
	cat, ent, err := e.lookup(name, agent)
	if err != nil {
		return nil, 0, err
	}
	return ent, cat.Generation, nil
}
