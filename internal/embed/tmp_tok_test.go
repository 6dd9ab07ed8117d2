package embed

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestTmpTokTiming(t *testing.T) {
	m, err := Open(context.Background(), Config{Dir: "../../models/mcpsag-static-v1"})
	if err != nil {
		t.Skip(err)
	}
	defer m.Close()
	short := "Can you help me find research papers on a specific topic?"
	long := strings.Repeat("Deploy the service to kubernetes, then run the integration tests and report flaky ones. ", 24)
	for _, s := range []string{short, long} {
		start := time.Now()
		for range 200 {
			m.tokenize(s)
		}
		tok := time.Since(start) / 200
		start = time.Now()
		for range 200 {
			m.Embed(context.Background(), []string{s}, Query)
		}
		t.Logf("len %d: tokenize %v, embed %v", len(s), tok, time.Since(start)/200)
	}
}
