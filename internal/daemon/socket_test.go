package daemon_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestSocketIsNeverOpenToOthers watches the state directory while a router
// starts: the socket other sessions attach to must appear there already
// restricted to its owner (renamed into place), never be made in place,
// where it would have the umask's permissions until a chmod; it is removed
// at the stop.
func TestSocketIsNeverOpenToOthers(t *testing.T) {
	state := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, state, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{StateDir: state})

	var created, movedIn bool
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if name != "router.sock" {
				continue
			}
			created = created || ev.Mask&unix.IN_CREATE != 0
			movedIn = movedIn || ev.Mask&unix.IN_MOVED_TO != 0
		}
	}
	if created || !movedIn {
		t.Errorf("router.sock: made in place %v, renamed into place %v; want only renamed", created, movedIn)
	}
	sock := filepath.Join(state, "router.sock")
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("router.sock: %v, %v; want a socket with mode 0600", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(state, ".s[0-9]*")); len(left) > 0 {
		t.Errorf("left in the state directory: %v", left)
	}
	r.Stop(t)
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("router.sock after the stop: %v, want removed", err)
	}
}
