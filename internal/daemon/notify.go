package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpsag/router/internal/sdnotify"
)

// notifyReady tells a service manager (systemd's Type=notify) that the
// router serves, and starts the watchdog when the manager asks for one.
// Without $NOTIFY_SOCKET it does nothing.
func (m *Main) notifyReady() {
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	n := sdnotify.FromEnv(getenv)
	if n == nil {
		return
	}
	m.notifier = n
	st, err := m.router.Status(context.Background())
	status := "serving"
	if err == nil {
		status = fmt.Sprintf("serving %d skills", st.Skills)
	}
	if err := n.Notify("READY=1", "STATUS="+status); err != nil {
		m.log.Warn("cannot tell the service manager the router is ready", "err", err)
	}
	if every := n.WatchdogInterval(); every > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		m.stopWatchdog, m.watchdogDone = cancel, make(chan struct{})
		go m.watchdog(ctx, n, every/2)
	}
}

// watchdog pings the service manager every interval while the router
// answers: the gRPC server still serves and a Status call returns within
// the interval. A router stuck in a deadlock stops the pings, and the
// manager restarts it once its WatchdogSec has passed.
func (m *Main) watchdog(ctx context.Context, n *sdnotify.Notifier, interval time.Duration) {
	defer close(m.watchdogDone)
	rt, ended := m.router, m.serveEnded
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := answers(ctx, func(ctx context.Context) error {
			_, err := rt.Status(ctx)
			return err
		}, ended, interval)
		switch {
		case err == nil:
			if err := n.Notify("WATCHDOG=1"); err != nil {
				m.log.Warn("cannot ping the service manager's watchdog", "err", err)
			}
			failing = false
		case ctx.Err() != nil:
			return
		case !failing:
			m.log.Error("the router does not answer; watchdog pings stop until it does", "err", err)
			failing = true
		}
	}
}

// answers checks, within limit, that the gRPC server still serves (ended is
// not closed) and that status answers.
func answers(ctx context.Context, status func(context.Context) error, ended <-chan struct{}, limit time.Duration) error {
	select {
	case <-ended:
		return errors.New("the gRPC server stopped")
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		answered <- status(ctx)
	}()
	select {
	case err := <-answered:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no status within %s", limit)
	}
}

// notifyStopping tells the service manager the router stops, and ends the
// watchdog.
func (m *Main) notifyStopping() {
	if m.stopWatchdog != nil {
		m.stopWatchdog()
		<-m.watchdogDone
		m.stopWatchdog = nil
	}
	if err := m.notifier.Notify("STOPPING=1"); err != nil {
		m.log.Warn("cannot tell the service manager the router stops", "err", err)
	}
}
