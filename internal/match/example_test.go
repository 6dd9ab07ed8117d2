package match_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// The daemon builds one Index per catalog generation and calls Match for
// each task; here without embeddings, so matching is keyword-only.
func ExampleIndex_Match() {
	skills := []*skill.Skill{
		{Name: "pdf-forms", Frontmatter: skill.Frontmatter{Description: "Fill in PDF forms and flatten them",
			Triggers: []string{"fill pdf form"}}},
		{Name: "k8s-deploy", Frontmatter: skill.Frontmatter{Description: "Deploy services to Kubernetes with Helm"}},
	}
	ix, err := match.Build(context.Background(), match.BuildInput{Skills: skills, Config: match.DefaultConfig()})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ix.Match(context.Background(), skill.MatchRequest{Task: "Please fill this PDF form", Options: skill.MatchOptions{Mode: skill.ModeKeyword}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range res.Candidates {
		fmt.Printf("%s: %s\n", c.Skill.Name, c.Reason)
	}
	res, _ = ix.Match(context.Background(), skill.MatchRequest{Task: "What is the capital of Peru?", Options: skill.MatchOptions{Mode: skill.ModeKeyword}}, nil)
	fmt.Println(res.Abstained, res.AbstainReason)
	// Output:
	// pdf-forms: bm25 #1 (4.09); trigger "fill pdf form"; names the skill; boost +0.300
	// true no_match
}

// TestBuildLeavesNoGoroutines checks that an Index holds no background
// work: the bleve index is closed once its snapshot is taken.
func TestBuildLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		ix := build(t, catalog(), match.DefaultConfig(), nil, nil)
		mustMatch(t, ix, skill.MatchRequest{Task: "fill pdf form"})
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Errorf("%d goroutines after 20 builds, %d before", n, before)
	}
}
