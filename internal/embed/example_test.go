package embed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
)

func ExampleManager() {
	tmp, err := os.MkdirTemp("", "embed-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		panic(err)
	}

	ctx := context.Background()
	cfg := embed.Config{Dir: dir}
	m := embed.NewManager(cfg, nil, nil)
	defer m.Close()
	if err := m.Reload(ctx, cfg); err != nil {
		// The router keeps serving: Embed returns ErrUnavailable and
		// matching uses keywords only.
		fmt.Println("degraded:", embed.ReasonOf(err))
		return
	}
	q, err := m.Embed(ctx, []string{"pdf form"}, embed.Query)
	if errors.Is(err, embed.ErrUnavailable) {
		return
	}
	docs, _ := m.Embed(ctx, []string{"fill pdf forms", "kubernetes deploy"}, embed.Document)
	fmt.Println("dimension:", m.Identity().Dimension)
	fmt.Println("pdf form is closer to fill pdf forms:", cosine(q[0], docs[0]) > cosine(q[0], docs[1]))
	// Output:
	// dimension: 32
	// pdf form is closer to fill pdf forms: true
}
