package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// Example shows how the daemon wires telemetry: Setup first, the stats
// handler into the gRPC server, and the Recorder into the code that
// matches, loads and reindexes. OTLP export is switched on from outside,
// with OTEL_EXPORTER_OTLP_ENDPOINT and friends.
func Example() {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Config{
		ServiceVersion: "v0.1.0",
		AdminAddr:      "127.0.0.1:0", // Prometheus /metrics; 127.0.0.1:9464 in production
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tel.Shutdown(context.WithoutCancel(ctx)) // flushes; give it a deadline in real code

	h := tel.GRPCServerHandler()
	srv := grpc.NewServer(grpc.StatsHandler(h))
	// ... register the router, health and reflection services ...
	h.KnownMethods(srv)

	rec := tel.Recorder()
	rec.RegisterIndexGauge(func() telemetry.IndexSize { return telemetry.IndexSize{Served: 8} })

	ctx, span := tel.Tracer().Start(ctx, "Match")
	start := time.Now()
	res := skill.MatchResult{Abstained: true, AbstainReason: skill.AbstainBelowThreshold}
	rec.SkillSelected(ctx, telemetry.Selection{Task: "fill in the tax form", TopK: 3, Result: res, Latency: time.Since(start)})
	span.End()

	fmt.Println(tel.AdminAddr() != "")
	// Output: true
}
