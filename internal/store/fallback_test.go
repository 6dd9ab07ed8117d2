package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestStaleTemporaryCachesAreRemoved: a router killed while it served from
// a temporary cache leaves its folder behind; the next fallback removes the
// folders no process holds locked, and only those that are not brand new.
func TestStaleTemporaryCachesAreRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-2 * staleAfter)
	mk := func(name string, withFile bool, mod time.Time) string {
		t.Helper()
		d := filepath.Join(tmp, statedir.TempCachePrefix+name)
		must(t, os.Mkdir(d, 0o700))
		if withFile {
			write(t, filepath.Join(d, statedir.CacheFile), []byte("left behind"))
		}
		must(t, os.Chtimes(d, mod, mod))
		return d
	}
	abandoned, empty := mk("abandoned", true, old), mk("empty", false, old)
	fresh := mk("fresh", true, time.Now())
	inUse := mk("in-use", true, old)
	f, err := os.OpenFile(filepath.Join(inUse, statedir.CacheFile), os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	must(t, os.Chtimes(inUse, old, old))
	other := filepath.Join(tmp, "mcpsag-mcp-unrelated")
	must(t, os.Mkdir(other, 0o700))
	must(t, os.Chtimes(other, old, old))

	state := filepath.Join(tmp, "state")
	write(t, state, []byte("a file where the state directory belongs"))
	db, err := OpenOrFallback(state, Options{LockTimeout: 200 * time.Millisecond})
	must(t, err)
	defer db.Close()
	for _, d := range []string{abandoned, empty} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s was kept (stat: %v)", filepath.Base(d), err)
		}
	}
	for _, d := range []string{fresh, inUse, other, db.Dir()} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
	// The standalone MCP sessions' state directories, by their prefix.
	RemoveAbandoned(tmp, "mcpsag-mcp-", nil)
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an abandoned mcpsag-mcp- directory was kept (stat: %v)", err)
	}
}

// TestOnlyTheNewestMovedAsideFileIsKept: each start that finds the cache
// unusable moves it aside; older moved-aside files are removed, so that
// repeated damage does not fill the disk. Other files are left alone.
func TestOnlyTheNewestMovedAsideFileIsKept(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"corrupt-100", "incompatible-200", "corrupt-300"} {
		p := filepath.Join(dir, statedir.CacheFile+"."+name)
		write(t, p, []byte("an older damaged cache"))
		mod := time.Now().Add(time.Duration(i-10) * time.Minute)
		must(t, os.Chtimes(p, mod, mod))
	}
	keep := []string{statedir.CacheFile + ".clean-notes", statedir.CacheFile + ".corrupt-x1", statedir.CacheFile + ".Corrupt-1", "other.corrupt-1"}
	for _, name := range keep {
		write(t, filepath.Join(dir, name), []byte("not a moved-aside cache"))
	}
	write(t, filepath.Join(dir, statedir.CacheFile), []byte("not a bbolt file"))
	db, err := Open(dir, Options{LockTimeout: time.Second})
	must(t, err)
	defer db.Close()
	if db.Recovered == "" {
		t.Fatal("the damaged cache was not moved aside")
	}
	var aside []string
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		if isAsideName(e.Name()) {
			aside = append(aside, e.Name())
		}
	}
	if len(aside) != 1 || !strings.Contains(db.Recovered, aside[0]) {
		t.Errorf("moved-aside files %v; want only the one just moved (%s)", aside, db.Recovered)
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}
