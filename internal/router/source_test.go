package router

import (
	"context"

	"github.com/mcpsag/router/internal/loader"
)

// fromLoader is l as the router's Source, as the daemon wires it (without
// the models' and the cache's status).
func fromLoader(l *loader.Loader) Source { return loaderSource{l} }

type loaderSource struct{ *loader.Loader }

func (s loaderSource) Start(ctx context.Context, publish func(*Generation)) error {
	return s.Loader.Start(ctx, func(g *loader.Generation) {
		publish(&Generation{ID: g.ID, ContentID: g.ContentID, Catalog: g.Catalog, Index: g.Index, Files: g})
	})
}
