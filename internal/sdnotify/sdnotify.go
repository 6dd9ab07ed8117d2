// Package sdnotify tells the service manager about the router's state, as
// systemd's sd_notify(3) does: one datagram of NEWLINE-separated KEY=VALUE
// assignments to the Unix socket named by $NOTIFY_SOCKET (READY=1 once the
// service serves, STOPPING=1 when it begins to stop, WATCHDOG=1 at least
// every $WATCHDOG_USEC). Outside such a manager, $NOTIFY_SOCKET is unset and
// there is nothing to tell.
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Notifier sends state changes to the service manager. A nil *Notifier
// (no $NOTIFY_SOCKET) sends nothing.
type Notifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration
}

// FromEnv returns the Notifier that getenv's $NOTIFY_SOCKET names, or nil
// when it names none. A socket path starting with "@" is in the abstract
// namespace. $WATCHDOG_USEC sets the watchdog interval, unless
// $WATCHDOG_PID names another process.
func FromEnv(getenv func(string) string) *Notifier {
	socket := getenv("NOTIFY_SOCKET")
	if socket == "" {
		return nil
	}
	if strings.HasPrefix(socket, "@") {
		socket = "\x00" + socket[1:]
	}
	n := &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}}
	if pid := getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return n
	}
	if usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64); err == nil && usec > 0 {
		n.watchdog = time.Duration(usec) * time.Microsecond
	}
	return n
}

// Notify sends assignments such as "READY=1" or "STATUS=serving" in one
// datagram. It does nothing on a nil Notifier.
func (n *Notifier) Notify(assignments ...string) error {
	if n == nil {
		return nil
	}
	for _, a := range assignments {
		if !strings.Contains(a, "=") || strings.Contains(a, "\n") {
			return fmt.Errorf("sdnotify: %q is not one KEY=VALUE line", a)
		}
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(assignments, "\n"))); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// WatchdogInterval returns how often the manager wants WATCHDOG=1 (the
// service must send it more often: half of it is the usual choice); 0 when
// it does not watch, or for a nil Notifier.
func (n *Notifier) WatchdogInterval() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}
