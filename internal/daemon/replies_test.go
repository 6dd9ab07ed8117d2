package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestListingFitsInMessages serves 300 skills whose descriptions each
// nearly fill a frontmatter (60,000 characters; 18 MB in all) and lists
// them in pages of 1,000 over gRPC: every page must arrive (a page of all
// of them was 18 MB, over the 16 MiB a reply may be, and failed the
// listing with ResourceExhausted for every client), and the pages together
// must hold every skill once.
func TestListingFitsInMessages(t *testing.T) {
	ws := t.TempDir()
	for i := range 300 {
		name := fmt.Sprintf("wide-%03d", i)
		desc := fmt.Sprintf("Skill %d. ", i) + strings.Repeat(strings.Repeat("x", 59)+" ", 1000)
		p := filepath.Join(ws, "skills", name, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nbody\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := daemontest.Start(t, ws, daemontest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen, token, pages := map[string]int{}, "", 0
	for {
		res, err := r.Client.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, s := range res.GetSkills() {
			seen[s.GetName()]++
		}
		if token = res.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(seen) != 300 {
		t.Errorf("the pages held %d skills, want 300", len(seen))
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
	}
	if pages < 5 {
		t.Errorf("%d pages for 18 MB of descriptions; want pages of at most 4 MiB", pages)
	}
}
