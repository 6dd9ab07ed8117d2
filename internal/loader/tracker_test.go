package loader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/skillfs"
)

// TestScanHonoursCancellation: a scan whose context has ended stops with
// the context's error, a full scan as well as a rescan of the folders
// events named, and keeps the last scan it had; and a cancelled pass
// fails with that error, leaving the loader's generation as it was.
func TestScanHonoursCancellation(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 3 {
		writeSkill(t, root, fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), "a helper")
	}
	tr := newTracker(ws, skillfs.DefaultRoots(), skillfs.DefaultScanLimits, t.TempDir(), false, slog.New(slog.DiscardHandler))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	if _, err := tr.find(cancelled, false, false, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("full scan under a cancelled context: err %v, want %v", err, context.Canceled)
	}
	if last, _ := tr.lastScan(); last != nil {
		t.Errorf("a cancelled first scan was kept as the last scan: %d files", len(last.Files))
	}
	f, err := tr.find(context.Background(), false, false, nil)
	if err != nil || len(f.scan.Files) != 3 {
		t.Fatalf("full scan: %d files, err %v; want 3", len(f.scan.Files), err)
	}
	edited := filepath.Join(root, "s1", "SKILL.md")
	if _, err := tr.find(cancelled, false, true, []string{edited}); !errors.Is(err, context.Canceled) {
		t.Fatalf("rescan under a cancelled context: err %v, want %v", err, context.Canceled)
	}
	if last, _ := tr.lastScan(); len(last.Files) != 3 {
		t.Errorf("the last scan after a cancelled rescan holds %d files, want 3", len(last.Files))
	}

	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)
	if _, _, err := passFrom(cancelled, ti.l, ti.prev, false, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a pass under a cancelled context: err %v, want %v", err, context.Canceled)
	}
}
