package match_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// fakeEmbedder is a QueryEmbedder made of a function, for tests that need
// exact vectors or failures.
type fakeEmbedder struct {
	embed func(ctx context.Context, text string) ([]float32, error)
}

func (f fakeEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, err := f.embed(ctx, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// constEmbedder returns v for every task.
func constEmbedder(v []float32) fakeEmbedder {
	return fakeEmbedder{embed: func(context.Context, string) ([]float32, error) { return v, nil }}
}

var errModelDown = errors.New("model down")

// failingEmbedder always fails.
var failingEmbedder = fakeEmbedder{embed: func(context.Context, string) ([]float32, error) { return nil, errModelDown }}

// option changes a test skill.
type option func(*skill.Skill)

func withTriggers(ts ...string) option {
	return func(s *skill.Skill) { s.Frontmatter.Triggers = ts }
}

func withTags(ts ...string) option { return func(s *skill.Skill) { s.Frontmatter.Tags = ts } }

func hidden(s *skill.Skill) { s.Frontmatter.Hidden = true }

func noModel(s *skill.Skill) { s.Frontmatter.DisableModelInvocation = true }

func disabled(s *skill.Skill) {
	f := false
	s.Registry.Enabled = &f
	s.Registry.Source = "registry.json"
}

func forAgent(agent string) option { return func(s *skill.Skill) { s.Root.Agent = agent } }

func newSkill(name, desc string, opts ...option) *skill.Skill {
	s := &skill.Skill{
		Name:        name,
		Dir:         "/skills/" + name,
		Root:        skill.Root{Path: "/skills", Kind: skill.KindProject},
		Frontmatter: skill.Frontmatter{Name: name, Description: desc},
		ContentHash: name,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// catalog is a small set of skills used by several tests.
func catalog() []*skill.Skill {
	return []*skill.Skill{
		newSkill("pdf-forms", "Fill in PDF forms and flatten them", withTriggers("fill pdf form"), withTags("pdf")),
		newSkill("pdf-extract", "Extract text and tables from PDF files"),
		newSkill("k8s-deploy", "Deploy services to a Kubernetes cluster with Helm", withTriggers("helm upgrade")),
		newSkill("git-commit", "Write commit messages for staged changes", withTriggers("commit message")),
		newSkill("sql-tuning", "Speed up slow SQL queries with indexes"),
		newSkill("image-resize", "Resize and crop images, make thumbnails"),
	}
}

// build builds an index over skills with cfg and optional vectors and
// embedder.
func build(t testing.TB, skills []*skill.Skill, cfg match.Config, vecs [][]float32, emb match.QueryEmbedder) *match.Index {
	t.Helper()
	ix, err := match.Build(context.Background(), match.BuildInput{
		Skills: skills, Vectors: vecs, Embedder: emb, Config: cfg, Generation: 7,
		Body: func(s *skill.Skill) (string, error) { return "Body of " + s.Name + ".", nil },
	})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return ix
}

func names(cs []skill.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Skill.Name
	}
	return out
}

func mustMatch(t testing.TB, ix *match.Index, req skill.MatchRequest) skill.MatchResult {
	t.Helper()
	res, err := ix.Match(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Match(%q): %v", req.Task, err)
	}
	return res
}

func ptr[T any](v T) *T { return &v }

// onehot returns a dim-long vector with 1 at i.
func onehot(dim, i int) []float32 {
	v := make([]float32, dim)
	v[i] = 1
	return v
}
