package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/statedir"
)

// openFallbackT opens dir with OpenOrFallback and checks the temporary cache
// works and disappears at Close.
func openFallbackT(t *testing.T, dir, wantInReason string) {
	t.Helper()
	db, err := OpenOrFallback(dir, Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("OpenOrFallback: %v", err)
	}
	if db.Degraded() == "" || !strings.Contains(db.Degraded(), wantInReason) {
		t.Errorf("Degraded = %q, want a reason mentioning %q", db.Degraded(), wantInReason)
	}
	if strings.HasPrefix(db.Dir(), dir) {
		t.Errorf("temporary cache %s is inside the unusable state dir %s", db.Dir(), dir)
	}
	populate(t, db, 20)
	files, err := db.Files()
	if err != nil || len(files) != 20 {
		t.Errorf("temporary cache holds %d records (err %v), want 20", len(files), err)
	}
	tmp := db.Dir()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary cache dir %s survived Close (stat: %v)", tmp, err)
	}
}

func TestFallbackWhenTheCacheIsAFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, statedir.CacheFile), 0o750); err != nil {
		t.Fatal(err)
	}
	openFallbackT(t, dir, "is a directory")
	if fi, err := os.Stat(filepath.Join(dir, statedir.CacheFile)); err != nil || !fi.IsDir() {
		t.Errorf("the folder in the way was touched: %v", err)
	}
}

func TestFallbackWhenTheStateDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(file, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	openFallbackT(t, file, "not a directory")
}

func TestFallbackNeverBypassesTheLock(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	defer db.Close()
	second, err := OpenOrFallback(dir, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		if second != nil {
			second.Close()
		}
		t.Fatalf("OpenOrFallback on a held state dir: %v, want ErrLocked", err)
	}
}

func TestHealthyCacheIsNotDegraded(t *testing.T) {
	db, err := OpenOrFallback(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Degraded() != "" {
		t.Errorf("Degraded = %q on a healthy state dir", db.Degraded())
	}
}

// mountTmpfs mounts a small tmpfs, or skips: it needs root (CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; the read-only and full file system cases are covered by the reliability suite where permitted")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestFallbackOnAReadOnlyFileSystemWithACorruptCache(t *testing.T) {
	mnt := mountTmpfs(t, "size=1m")
	if err := os.WriteFile(filepath.Join(mnt, statedir.CacheFile), []byte("not a database, and it cannot be moved aside"), 0o640); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only (%v: %s)", err, out)
	}
	openFallbackT(t, mnt, "read-only")
}

func TestFallbackOnAFullFileSystem(t *testing.T) {
	mnt := mountTmpfs(t, "size=64k")
	// Fill it: bbolt needs four pages to create a cache.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	openFallbackT(t, mnt, "no space left")
}
