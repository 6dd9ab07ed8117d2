package kubernetes_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking, as the docs tell clients to do
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// docServiceConfig returns the service config docs/deployment.md gives
// clients, the JSON block after its <!-- service-config --> marker.
func docServiceConfig(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- service-config -->\n```json\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		t.Fatal("docs/deployment.md has no ```json block after <!-- service-config -->")
	}
	if !json.Valid([]byte(block)) {
		t.Fatalf("the documented service config is not JSON:\n%s", block)
	}
	return block
}

// TestClientSideBalancing dials two routers through a resolver that returns
// both addresses, as DNS does for the headless Service, with the documented
// service config: calls alternate between them, and once one starts to drain
// (health NOT_SERVING, still accepting calls) the client sends it nothing.
func TestClientSideBalancing(t *testing.T) {
	serviceConfig := docServiceConfig(t)

	// Two replicas told apart by their catalogs: the second lacks one skill.
	a := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	wsB := daemontest.CopyExamples(t)
	if err := os.RemoveAll(filepath.Join(wsB, "skills", "release-notes")); err != nil {
		t.Fatal(err)
	}
	b := daemontest.Start(t, wsB, daemontest.Options{
		Configure: func(c *config.Config) { c.Shutdown.Drain = 4 * time.Second },
	})

	res := manual.NewBuilderWithScheme("replicas")
	res.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a.Addr}, {Addr: b.Addr}}})
	conn, err := grpc.NewClient(res.Scheme()+":///mcpsag-router-headless",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(res),
		grpc.WithDefaultServiceConfig(serviceConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := routerv1.NewSkillRouterClient(conn)

	// which calls ListSkills once and tells the replica by its catalog size.
	sizes := map[string]int{}
	for name, r := range map[string]*daemontest.Router{"a": a, "b": b} {
		sizes[name] = catalogSize(t, r.Client)
	}
	if sizes["a"] == sizes["b"] {
		t.Fatalf("the replicas serve %d skills each: cannot tell them apart", sizes["a"])
	}
	which := func() string {
		n := catalogSize(t, client)
		for name, size := range sizes {
			if size == n {
				return name
			}
		}
		t.Fatalf("a call answered by neither replica (%d skills)", n)
		return ""
	}

	seen := map[string]int{}
	for range 20 {
		seen[which()]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("20 calls went %v: want both replicas", seen)
	}

	// b starts its two-stage stop: health NOT_SERVING for the drain period.
	stopped := make(chan struct{})
	go func() { b.Stop(t); close(stopped) }()
	defer func() { <-stopped }()
	direct, err := grpc.NewClient(b.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	deadline := time.Now().Add(2 * time.Second)
	for streak := 0; streak < 20; {
		if which() == "a" {
			streak++
		} else {
			streak = 0
		}
		if time.Now().After(deadline) {
			t.Fatal("the client still sends calls to the draining replica")
		}
	}
	// b still answers a client that ignores health: the balanced client
	// moved away because of the health check, not a closed connection.
	if n := catalogSize(t, routerv1.NewSkillRouterClient(direct)); n != sizes["b"] {
		t.Errorf("the draining replica answered with %d skills", n)
	}
}

func catalogSize(t *testing.T, c routerv1.SkillRouterClient) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.ListSkills(ctx, &routerv1.ListSkillsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return int(res.TotalSize)
}
