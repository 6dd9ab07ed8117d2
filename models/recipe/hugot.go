package main

import (
	"fmt"

	"github.com/knights-analytics/hugot"
	"github.com/knights-analytics/hugot/pipelines"
)

// hugotEmbedder embeds through hugot's pure-Go backend: the path the router
// runs, so eval figures measure the exported files themselves.
type hugotEmbedder struct {
	session  *hugot.Session
	pipeline *pipelines.FeatureExtractionPipeline
	batch    int
}

func newHugotEmbedder(dir string) (*hugotEmbedder, error) {
	s, err := hugot.NewGoSession()
	if err != nil {
		return nil, fmt.Errorf("hugot session: %w", err)
	}
	p, err := hugot.NewPipeline(s, hugot.FeatureExtractionConfig{
		ModelPath: dir,
		Name:      "mcpsag-recipe",
		Options:   []hugot.FeatureExtractionOption{pipelines.WithNormalization()},
	})
	if err != nil {
		s.Destroy()
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return &hugotEmbedder{session: s, pipeline: p, batch: 32}, nil
}

// Embed embeds texts in batches of 32. It does not cap the tokens of a text:
// the recipe only feeds it short eval and validation texts (the router's
// embedder applies max_tokens).
func (h *hugotEmbedder) Embed(texts []string) ([][]float32, error) {
	var out [][]float32
	for lo := 0; lo < len(texts); lo += h.batch {
		hi := min(len(texts), lo+h.batch)
		res, err := h.pipeline.RunPipeline(texts[lo:hi])
		if err != nil {
			return nil, err
		}
		out = append(out, res.Embeddings...)
	}
	return out, nil
}

func (h *hugotEmbedder) Close() error { return h.session.Destroy() }
