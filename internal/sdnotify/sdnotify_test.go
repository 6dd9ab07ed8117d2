package sdnotify

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// listen opens a datagram socket as a service manager does and returns its
// path and a function that reads the next datagram.
func listen(t *testing.T) (string, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, func() string {
		t.Helper()
		buf := make([]byte, 4096)
		if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNotifySendsOneDatagram(t *testing.T) {
	path, next := listen(t)
	n := FromEnv(envOf(map[string]string{"NOTIFY_SOCKET": path}))
	if err := n.Notify("READY=1", "STATUS=serving 7 skills"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "READY=1\nSTATUS=serving 7 skills" {
		t.Errorf("datagram %q", got)
	}
	if err := n.Notify("STATUS=two\nlines"); err == nil {
		t.Error("an assignment with a newline was sent")
	}
	if err := n.Notify("READY"); err == nil {
		t.Error("an assignment without = was sent")
	}
	if n.WatchdogInterval() != 0 {
		t.Errorf("watchdog %s without WATCHDOG_USEC", n.WatchdogInterval())
	}
}

func TestAbstractSocket(t *testing.T) {
	name := "mcpsag-sdnotify-test-" + strconv.Itoa(os.Getpid())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "\x00" + name, Net: "unixgram"})
	if err != nil {
		t.Skipf("abstract sockets unavailable: %v", err)
	}
	defer conn.Close()
	if err := FromEnv(envOf(map[string]string{"NOTIFY_SOCKET": "@" + name})).Notify("WATCHDOG=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "WATCHDOG=1" {
		t.Errorf("read %q, %v", buf[:n], err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		env  map[string]string
		want time.Duration
	}{
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000"}, 30 * time.Second},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": pid}, 30 * time.Second},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, 0},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "soon"}, 0},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "-5"}, 0},
	} {
		if got := FromEnv(envOf(tc.env)).WatchdogInterval(); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.env, got, tc.want)
		}
	}
	var none *Notifier = FromEnv(envOf(nil))
	if none != nil || none.Notify("READY=1") != nil || none.WatchdogInterval() != 0 {
		t.Error("without NOTIFY_SOCKET the notifier must do nothing")
	}
}

func TestNotifyWithoutListener(t *testing.T) {
	n := FromEnv(envOf(map[string]string{"NOTIFY_SOCKET": filepath.Join(t.TempDir(), "gone")}))
	if err := n.Notify("READY=1"); err == nil {
		t.Error("no error when nobody listens")
	}
}
