package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// fakeRouter is a skill.Router made of function fields: the router is the
// edge of this package (internal/daemon's end-to-end tests run the front
// against the real one). Fields left nil answer CodeUnimplemented.
type fakeRouter struct {
	MatchFunc            func(context.Context, skill.MatchRequest) (*skill.MatchResult, error)
	ListFunc             func(context.Context, skill.ListRequest) (*skill.ListResult, error)
	GetFunc              func(context.Context, skill.GetRequest) (*skill.GetResult, error)
	LoadFunc             func(context.Context, skill.LoadRequest) (*skill.LoadResult, error)
	ReindexFunc          func(context.Context, skill.ReindexRequest) (*skill.ReindexStats, error)
	StatusFunc           func(context.Context) (*skill.Status, error)
	AuthorizeExecFunc    func(context.Context, skill.ExecRequest) (*skill.ExecDecision, error)
	ReportExecResultFunc func(context.Context, skill.ExecReport) (*skill.ExecReport, error)
	CallToolFunc         func(context.Context, skill.ToolCall) (*skill.ToolResult, error)
	WaitGenerationFunc   func(context.Context, uint64) (uint64, error)
}

var errUnimplemented = skill.Errorf(skill.CodeUnimplemented, "not in this fake")

func (r *fakeRouter) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	if r.MatchFunc == nil {
		return nil, errUnimplemented
	}
	return r.MatchFunc(ctx, req)
}

func (r *fakeRouter) List(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
	if r.ListFunc == nil {
		return nil, errUnimplemented
	}
	return r.ListFunc(ctx, req)
}

func (r *fakeRouter) Get(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	if r.GetFunc == nil {
		return nil, errUnimplemented
	}
	return r.GetFunc(ctx, req)
}

func (r *fakeRouter) Load(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	if r.LoadFunc == nil {
		return nil, errUnimplemented
	}
	return r.LoadFunc(ctx, req)
}

func (r *fakeRouter) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	if r.ReindexFunc == nil {
		return nil, errUnimplemented
	}
	return r.ReindexFunc(ctx, req)
}

func (r *fakeRouter) Status(ctx context.Context) (*skill.Status, error) {
	if r.StatusFunc == nil {
		return nil, errUnimplemented
	}
	return r.StatusFunc(ctx)
}

func (r *fakeRouter) AuthorizeExec(ctx context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
	if r.AuthorizeExecFunc == nil {
		return nil, errUnimplemented
	}
	return r.AuthorizeExecFunc(ctx, req)
}

func (r *fakeRouter) ReportExecResult(ctx context.Context, req skill.ExecReport) (*skill.ExecReport, error) {
	if r.ReportExecResultFunc == nil {
		return nil, errUnimplemented
	}
	return r.ReportExecResultFunc(ctx, req)
}

func (r *fakeRouter) CallTool(ctx context.Context, call skill.ToolCall) (*skill.ToolResult, error) {
	if r.CallToolFunc == nil {
		return nil, errUnimplemented
	}
	return r.CallToolFunc(ctx, call)
}

func (r *fakeRouter) WaitGeneration(ctx context.Context, after uint64) (uint64, error) {
	if r.WaitGenerationFunc == nil {
		<-ctx.Done()
		return after, ctx.Err()
	}
	return r.WaitGenerationFunc(ctx, after)
}

// catalog is the data behind the fake: a few skills with bodies and files,
// a generation that publish bumps, and a record of what reached the router.
type catalog struct {
	mu     sync.Mutex
	gen    uint64
	skills []*skill.Skill
	bodies map[string]string // by skill name and agent ("name@agent")
	// sources are the SKILL.md files, frontmatter and body, by the same key.
	sources map[string]string
	files   map[string]map[string][]byte // by skill key, then path
	flags   skill.Flags
	genCh   chan struct{}

	loads   []skill.LoadRequest
	origins []skill.Origin
}

func key(name, agent string) string { return name + "@" + agent }

func newCatalog() *catalog {
	c := &catalog{gen: 1, bodies: map[string]string{}, sources: map[string]string{}, files: map[string]map[string][]byte{}, genCh: make(chan struct{}),
		flags: skill.Flags{SkillsV1: true}}
	no, yes := false, true
	add := func(s *skill.Skill, body string, files map[string][]byte) {
		if s.Root.Kind == "" {
			s.Root.Kind = skill.KindProject
		}
		s.Root.Display = "/srv/secret-host-path/skills"
		s.Dir = "/srv/secret-host-path/skills/" + s.Name
		s.RelPath = s.Name + "/SKILL.md"
		s.BodyTokens = skill.EstimateTokens(body)
		c.sources[key(s.Name, s.Root.Agent)] = skillSource(s, body)
		s.ContentHash = skill.Hash([]byte(c.sources[key(s.Name, s.Root.Agent)]))
		for p, data := range files {
			s.Resources = append(s.Resources, skill.Resource{Path: p, Size: int64(len(data))})
		}
		slices.SortFunc(s.Resources, func(a, b skill.Resource) int { return strings.Compare(a.Path, b.Path) })
		c.skills = append(c.skills, s)
		c.bodies[key(s.Name, s.Root.Agent)] = body
		c.files[key(s.Name, s.Root.Agent)] = files
	}
	add(&skill.Skill{Name: "pdf-form-filling", Frontmatter: skill.Frontmatter{Description: "Fill in PDF forms from JSON data", Tags: []string{"pdf"}}},
		"# PDF forms\n\nRead references/field-types.md first, then run scripts/fill.py.\n",
		map[string][]byte{
			"references/field-types.md": []byte("# Field types\n\nText, checkbox, radio.\n"),
			"scripts/fill.py":           []byte("print('fill')\n"),
			"assets/logo.png":           {0x89, 'P', 'N', 'G', 0xff, 0x00},
		})
	add(&skill.Skill{Name: "kubernetes-debugging", Frontmatter: skill.Frontmatter{Description: "Debug pods stuck in CrashLoopBackOff"}},
		strings.Repeat("Check the pod events and the previous container logs. ", 40), nil)
	add(&skill.Skill{Name: "release-notes", Frontmatter: skill.Frontmatter{Description: "Write release notes from git history", DisableModelInvocation: true}},
		"Collect merged changes since the last tag.\n", nil)
	add(&skill.Skill{Name: "secret-helper", Frontmatter: skill.Frontmatter{Description: "A hidden helper", Hidden: true}}, "hidden\n", nil)
	add(&skill.Skill{Name: "legacy-ftp", Frontmatter: skill.Frontmatter{Description: "Upload over FTP"}, Registry: skill.RegistryEntry{Enabled: &no, Source: "registry.json"}}, "ftp\n", nil)
	add(&skill.Skill{Name: "internal-lint", Frontmatter: skill.Frontmatter{Description: "Lint rules the model applies", UserInvocable: &no}}, "lint\n", nil)
	add(&skill.Skill{Name: "reviewer-checklist", Root: skill.Root{Agent: "reviewer"}, Frontmatter: skill.Frontmatter{Description: "Review pull requests with a checklist"}}, "Check tests.\n", nil)
	add(&skill.Skill{Name: "learned-trick", Root: skill.Root{Kind: skill.KindLearned}, Frontmatter: skill.Frontmatter{Description: "A trick an agent wrote down", UserInvocable: &yes}}, "trick\n", nil)
	add(&skill.Skill{Name: "data tools", Frontmatter: skill.Frontmatter{Description: "Tools for data files"}}, "data\n",
		map[string][]byte{"notes/a b.md": []byte("spaced\n"), "notes/empty.txt": {}})
	return c
}

// skillSource writes the SKILL.md of s with body.
func skillSource(s *skill.Skill, body string) string {
	fm := fmt.Sprintf("---\nname: %q\ndescription: %q\n", s.Name, s.Description())
	if s.Frontmatter.Hidden {
		fm += "hidden: true\n"
	}
	return fm + "---\n" + body
}

// manifest describes the files of s as the router's Get does.
func (c *catalog) manifest(s *skill.Skill) *skill.Manifest {
	k := key(s.Name, s.Root.Agent)
	src := []byte(c.sources[k])
	fm, _ := json.Marshal(map[string]any{"name": s.Name, "description": s.Description()})
	m := &skill.Manifest{Frontmatter: fm, Files: []skill.FileDigest{{Path: "SKILL.md", Size: int64(len(src)), SHA256: skill.Hash(src)}}}
	for _, r := range s.Resources {
		data := c.files[k][r.Path]
		m.Files = append(m.Files, skill.FileDigest{Path: r.Path, Size: int64(len(data)), SHA256: skill.Hash(data)})
	}
	return m
}

// get answers Get as the router does.
func (c *catalog) get(req skill.GetRequest) (*skill.GetResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.lookup(req.Name, req.Agent)
	if err != nil {
		return nil, err
	}
	res := &skill.GetResult{Entry: &skill.Entry{Skill: s, Rank: 1}, Generation: c.gen}
	if req.Manifest {
		if !s.Enabled() {
			return nil, skill.Errorf(skill.CodeFailedPrecondition, "skill %q is %s", s.Name, s.DisabledReason()).WithReason(skill.ReasonSkillDisabled)
		}
		res.Manifest = c.manifest(s)
	}
	return res, nil
}

// newSkill returns a global project skill for a catalog change.
func newSkill(name, description string) *skill.Skill {
	return &skill.Skill{Name: name, Root: skill.Root{Kind: skill.KindProject}, RelPath: name + "/SKILL.md",
		Frontmatter: skill.Frontmatter{Description: description}}
}

// publish applies change and serves a new generation.
func (c *catalog) publish(change func(c *catalog)) {
	c.mu.Lock()
	if change != nil {
		change(c)
	}
	c.gen++
	close(c.genCh)
	c.genCh = make(chan struct{})
	c.mu.Unlock()
}

// visible returns the copy of each skill agent sees: its own shadow global
// ones.
func (c *catalog) visible(agent string) []*skill.Skill {
	byName := map[string]*skill.Skill{}
	for _, s := range c.skills {
		switch {
		case s.Root.Agent == "" && byName[s.Name] == nil:
			byName[s.Name] = s
		case s.Root.Agent != "" && s.Root.Agent == agent:
			byName[s.Name] = s
		}
	}
	out := make([]*skill.Skill, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *skill.Skill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (c *catalog) lookup(name, agent string) (*skill.Skill, error) {
	for _, s := range c.visible(agent) {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, skill.Errorf(skill.CodeNotFound, "no skill named %q", skill.Clip(name, 60)).WithReason(skill.ReasonSkillNotFound)
}

const (
	fakeMaxTask   = 16384
	fakeMaxBudget = 20000
)

// router returns a fake over c that validates requests as the router does.
func (c *catalog) router() *fakeRouter {
	note := func(ctx context.Context) {
		c.mu.Lock()
		c.origins = append(c.origins, skill.OriginFrom(ctx))
		c.mu.Unlock()
	}
	return &fakeRouter{
		MatchFunc: func(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
			note(ctx)
			if err := req.Validate(skill.MatchLimits{MaxTaskBytes: fakeMaxTask, MaxTopK: 50}); err != nil {
				return nil, err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			res := &skill.MatchResult{Generation: c.gen, Mode: skill.ModeHybrid, Fusion: skill.FusionAdaptive}
			topK := req.TopK
			if topK == 0 {
				topK = 3
			}
			words := strings.Fields(strings.ToLower(req.Task))
			for _, s := range c.visible(req.Agent) {
				if !s.Enabled() || s.Frontmatter.Hidden || s.Frontmatter.DisableModelInvocation {
					continue
				}
				hits := 0
				for _, w := range words {
					if len(w) > 3 && strings.Contains(strings.ToLower(s.Description()), w) {
						hits++
					}
				}
				if hits > 0 {
					res.Candidates = append(res.Candidates, skill.Candidate{Skill: s, Fused: float64(hits) / float64(len(words)),
						Reason: fmt.Sprintf("%d task words in the description", hits)})
				}
			}
			slices.SortStableFunc(res.Candidates, func(a, b skill.Candidate) int {
				switch {
				case a.Fused > b.Fused:
					return -1
				case a.Fused < b.Fused:
					return 1
				}
				return 0
			})
			if len(res.Candidates) > topK {
				res.Candidates = res.Candidates[:topK]
			}
			// A verdict as the real router gives one: no skill without a
			// shared word, low confidence on a single one.
			switch {
			case len(res.Candidates) == 0:
				res.Abstained, res.AbstainReason, res.AbstainDetail = true, skill.AbstainNoMatch, "no skill shares a word with the task"
				res.Verdict, res.VerdictDetail = skill.VerdictNoSkill, res.AbstainDetail
			case res.Candidates[0].Fused*float64(len(words)) < 2:
				res.Verdict, res.VerdictDetail = skill.VerdictLowConfidence, "one task word in the description"
			default:
				res.Verdict, res.VerdictDetail = skill.VerdictConfident, "several task words in the description"
			}
			return res, nil
		},
		ListFunc: func(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
			note(ctx)
			if err := req.Validate(); err != nil {
				return nil, err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			var all []*skill.Skill
			for _, s := range c.visible(req.Agent) {
				if (s.Frontmatter.Hidden && !req.IncludeHidden) || (!s.Enabled() && !req.IncludeDisabled) {
					continue
				}
				all = append(all, s)
			}
			start := 0
			if req.PageToken != "" {
				n, err := strconv.Atoi(req.PageToken)
				if err != nil || n < 0 || n > len(all) {
					return nil, skill.InvalidArgument(skill.FieldPageToken, "not a token this router issued")
				}
				start = n
			}
			size := req.PageSize
			if size == 0 {
				size = skill.DefaultPageSize
			}
			end := min(start+size, len(all))
			res := &skill.ListResult{Skills: all[start:end], Total: len(all), Generation: c.gen}
			if end < len(all) {
				res.NextPageToken = strconv.Itoa(end)
			}
			if req.CatalogBudget > 0 {
				cat := &skill.RenderedCatalog{Budget: req.CatalogBudget}
				var b strings.Builder
				for _, s := range all {
					line := "- " + s.Name + ": " + s.Description() + "\n"
					if b.Len()+len(line) > req.CatalogBudget {
						cat.Cut = append(cat.Cut, s.Name)
						continue
					}
					b.WriteString(line)
					cat.Included = append(cat.Included, s.Name)
				}
				cat.Text, cat.Chars = b.String(), b.Len()
				res.Catalog = cat
			}
			return res, nil
		},
		GetFunc: func(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
			note(ctx)
			return c.get(req)
		},
		LoadFunc: func(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
			note(ctx)
			c.mu.Lock()
			c.loads = append(c.loads, req)
			c.mu.Unlock()
			if err := req.Validate(fakeMaxBudget); err != nil {
				return nil, err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			s, err := c.lookup(req.Name, req.Agent)
			if err != nil {
				return nil, err
			}
			if !s.Enabled() {
				return nil, skill.Errorf(skill.CodeFailedPrecondition, "skill %q is %s", s.Name, s.DisabledReason()).WithReason(skill.ReasonSkillDisabled)
			}
			res := &skill.LoadResult{Skill: s, Level: req.Level, Generation: c.gen, SHA256: s.ContentHash}
			k := key(s.Name, s.Root.Agent)
			switch req.Level {
			case skill.LevelBody:
				budget := req.TokenBudget
				if budget == 0 {
					budget = 5000
				}
				body := c.bodies[k]
				res.TotalTokens = skill.EstimateTokens(body)
				if res.TotalTokens > budget {
					body = string([]rune(body)[:budget*skill.CharsPerToken])
					res.Truncated = true
				}
				res.Tokens, res.TokenBudget, res.MediaType = skill.EstimateTokens(body), budget, "text/markdown; charset=utf-8"
				res.Content, res.Framed = fakeFrame("skill_content", s, "", body), true
			case skill.LevelResource:
				p := req.ResourcePath
				if p == "" || strings.ContainsAny(p, "\\\x00") || path.IsAbs(p) || !pathIsLocal(p) {
					return nil, skill.Errorf(skill.CodePermissionDenied, "%q leaves the skill folder", skill.Clip(p, 80))
				}
				data, ok := c.files[k][p]
				if p == "SKILL.md" {
					data, ok = []byte(c.sources[k]), true
				}
				if !ok {
					return nil, skill.Errorf(skill.CodeNotFound, "skill %q has no file %q", s.Name, skill.Clip(p, 80))
				}
				res.ResourcePath, res.Size = p, int64(len(data))
				if !utf8.Valid(data) {
					res.Data, res.MediaType = data, "image/png"
					break
				}
				res.MediaType = "text/markdown; charset=utf-8"
				if strings.HasSuffix(p, ".py") {
					res.MediaType = "text/x-python; charset=utf-8"
				}
				res.Tokens = skill.EstimateTokens(string(data))
				res.TotalTokens = res.Tokens
				res.Content, res.Framed = fakeFrame("skill_resource", s, p, string(data)), !req.Raw
				if req.Raw {
					res.Content = string(data)
				}
			}
			return res, nil
		},
		StatusFunc: func(ctx context.Context) (*skill.Status, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return &skill.Status{Serving: true, Generation: c.gen, Flags: c.flags, Skills: len(c.skills)}, nil
		},
		AuthorizeExecFunc: func(ctx context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
			note(ctx)
			if err := req.Validate(); err != nil {
				return nil, err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			d := &skill.ExecDecision{DecisionID: "d-" + strconv.Itoa(len(c.origins))}
			switch {
			case !c.flags.SkillsExec:
				d.Reason, d.Message = skill.DenyExecDisabled, "feature flag skills_exec is off"
			case req.Skill == "pdf-form-filling" && req.Script == "scripts/fill.py":
				d.Allowed, d.Message, d.ScriptSHA256 = true, "allowlisted by "+req.Caller, strings.Repeat("ab", 32)
			default:
				d.Reason, d.Message = skill.DenyNotAllowlisted, "no allowlist entry"
			}
			return d, nil
		},
		WaitGenerationFunc: func(ctx context.Context, after uint64) (uint64, error) {
			for {
				c.mu.Lock()
				gen, ch := c.gen, c.genCh
				c.mu.Unlock()
				if gen != after {
					return gen, nil
				}
				select {
				case <-ch:
				case <-ctx.Done():
					return after, ctx.Err()
				}
			}
		},
	}
}

func pathIsLocal(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "" || seg == "." {
			return false
		}
	}
	return true
}

// fakeFrame marks skill text as data, as the router's Load does.
func fakeFrame(tag string, s *skill.Skill, file, text string) string {
	attrs := fmt.Sprintf("name=%q trust=%q", s.Name, trustOf(s))
	if file != "" {
		attrs += fmt.Sprintf(" path=%q", file)
	}
	return "<" + tag + " " + attrs + ">\n" + text + "\n</" + tag + ">\n"
}
