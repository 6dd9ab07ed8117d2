package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
)

// Options say what to index.
type Options struct {
	// Skills is a skill root (folders holding SKILL.md), or a workspace
	// holding skills/ and agents/*/skills/.
	Skills string
	// ModelDir is the embedding model folder. Empty, missing or broken
	// means dense matching is unavailable; keyword-only evaluation
	// still runs.
	ModelDir string
	// Embed configures the model beyond its folder (prefixes, body
	// characters); Dir is taken from ModelDir.
	Embed embed.Config
	// Config configures matching; the zero value means
	// match.DefaultConfig().
	Config *match.Config
	// StateDir holds the temporary store; empty means a new temporary
	// folder, removed by Close.
	StateDir string
	Logger   *slog.Logger
}

// Corpus is an indexed skill folder ready for evaluation.
type Corpus struct {
	Index   *match.Index
	Catalog *loader.Catalog
	// Model is the embedding model's identity, zero when dense matching
	// is unavailable; DenseErr says why it is.
	Model    embed.Identity
	DenseErr error
	// Times spent loading skills, embedding them, and building the index.
	LoadTime, EmbedTime, IndexTime time.Duration

	db      *store.DB
	tmp     string
	manager *embed.Manager
	body    func(*skill.Skill) (string, error)
	vectors [][]float32
	winners []*skill.Skill
}

// ErrNoModel is DenseErr when no model folder was given or it does not
// exist.
var ErrNoModel = errors.New("no embedding model folder")

// Open loads, embeds and indexes opt.Skills. It fails when the folder
// cannot be read or holds no valid skill; a missing or broken model only
// sets DenseErr.
func Open(ctx context.Context, opt Options) (*Corpus, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(opt.Skills)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", abs)
	}
	c := &Corpus{}
	state := opt.StateDir
	if state == "" {
		if c.tmp, err = os.MkdirTemp("", "mcpsag-eval-"); err != nil {
			return nil, err
		}
		state = c.tmp
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	if c.db, err = store.Open(state, store.Options{Logger: log}); err != nil {
		return nil, err
	}

	start := time.Now()
	lcfg := loader.Config{Workspace: abs, Roots: []loader.RootSpec{{Path: abs, Kind: skill.KindProject}}}
	for _, sub := range []string{"skills", "agents"} {
		if fi, err := os.Stat(filepath.Join(abs, sub)); err == nil && fi.IsDir() {
			lcfg.Roots = loader.DefaultRoots()
			break
		}
	}
	ix, err := loader.NewIndexer(lcfg, c.db, log)
	if err != nil {
		return nil, err
	}
	cat, _, _, err := ix.Reindex(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("load skills from %s: %w", abs, err)
	}
	c.Catalog = cat
	c.winners = cat.Winners()
	if len(c.winners) == 0 {
		return nil, fmt.Errorf("no valid skill under %s", abs)
	}
	c.body = func(s *skill.Skill) (string, error) {
		b, found, err := c.db.Body(s.ContentHash)
		if err != nil {
			return "", err
		}
		if !found {
			return "", fmt.Errorf("no body stored for %s", s.Name)
		}
		return b, nil
	}
	c.LoadTime = time.Since(start)

	start = time.Now()
	c.vectors, c.DenseErr = c.embed(ctx, opt, log)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.EmbedTime = time.Since(start)

	cfg := match.DefaultConfig()
	if opt.Config != nil {
		cfg = *opt.Config
	}
	if c.Index, err = c.Build(ctx, cfg); err != nil {
		return nil, err
	}
	c.IndexTime = c.Index.Stats().Duration
	ok = true
	return c, nil
}

// embed loads the model and embeds every winner; it returns the reason when
// dense matching is unavailable.
func (c *Corpus) embed(ctx context.Context, opt Options, log *slog.Logger) ([][]float32, error) {
	if opt.ModelDir == "" {
		return nil, ErrNoModel
	}
	if _, err := os.Stat(opt.ModelDir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoModel, opt.ModelDir)
	}
	ecfg := opt.Embed
	ecfg.Dir = opt.ModelDir
	c.manager = embed.NewManager(ecfg, log, nil)
	if err := c.manager.Reload(ctx, ecfg); err != nil {
		return nil, fmt.Errorf("load model %s: %w", opt.ModelDir, err)
	}
	c.Model = c.manager.Identity()
	bodyChars := c.manager.Config().BodyChars
	texts := make([]string, len(c.winners))
	for i, s := range c.winners {
		body := ""
		if bodyChars > 0 {
			body, _ = c.body(s)
		}
		texts[i] = embed.DocumentText(s.Name, s.Description(), body, bodyChars)
	}
	vecs, _, err := embed.EmbedDocuments(ctx, c.manager, c.db, texts, 0)
	if err != nil {
		c.Model = embed.Identity{}
		return nil, fmt.Errorf("embed skills: %w", err)
	}
	return vecs, nil
}

// Build builds another Index over the same skills and vectors with cfg.
func (c *Corpus) Build(ctx context.Context, cfg match.Config) (*match.Index, error) {
	in := match.BuildInput{
		Skills:     c.winners,
		Vectors:    c.vectors,
		Body:       c.body,
		Generation: c.Catalog.Generation,
		Config:     cfg,
	}
	if c.DenseErr == nil && c.manager != nil {
		in.Embedder = c.manager
		in.Model = c.Model.Fingerprint
		in.Config = cfg.WithModelThreshold(c.manager.Status().MatchThreshold)
	}
	return match.Build(ctx, in)
}

// Close releases the model and the store and removes a temporary state
// folder.
func (c *Corpus) Close() error {
	var errs []error
	if c.manager != nil {
		errs = append(errs, c.manager.Close())
	}
	if c.db != nil {
		errs = append(errs, c.db.Close())
	}
	if c.tmp != "" {
		errs = append(errs, os.RemoveAll(c.tmp))
	}
	return errors.Join(errs...)
}
