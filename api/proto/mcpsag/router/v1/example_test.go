package routerv1_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon"
)

// routerAddr is the address of a router that TestMain starts on the
// repository's examples/ workspace, standing in for a deployed router.
var routerAddr string

// Example dials a router and asks which skill fits a task. Go clients import
// the generated package github.com/mcpsag/router/api/proto/mcpsag/router/v1;
// the router's address is usually 127.0.0.1:7443, or a Kubernetes Service.
func Example() {
	conn, err := grpc.NewClient(routerAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := routerv1.NewSkillRouterClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := client.Match(ctx, &routerv1.MatchRequest{Task: "fill in a PDF form from a JSON file", TopK: 3})
	if err != nil {
		log.Fatal(err)
	}
	if res.Abstained {
		fmt.Println("no skill fits:", res.AbstainReason)
		return
	}
	best := res.Candidates[0].Skill
	fmt.Printf("%s (%s)\n", best.Name, best.Source.GetKind())
	// Output: pdf-form-filling (SOURCE_KIND_PROJECT)
}

func TestMain(m *testing.M) {
	os.Exit(runWithRouter(m))
}

// runWithRouter starts a router on examples/ with its own state directory,
// runs the tests and examples, and stops it.
func runWithRouter(m *testing.M) int {
	state, err := os.MkdirTemp("", "routerv1-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	ws := filepath.Join("..", "..", "..", "..", "..", "examples")
	flags := config.Overrides{Workspace: ws, StateDir: state, Addr: "127.0.0.1:0"}
	cfg, err := config.Resolve(flags, func(string) string { return "" })
	if err != nil {
		fmt.Fprintln(os.Stderr, "router config:", err)
		return 1
	}
	r := &daemon.Main{Config: cfg, Overrides: flags, Stderr: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "start router:", err)
		return 1
	}
	defer r.Close(context.Background())
	routerAddr = r.Addr()
	return m.Run()
}
