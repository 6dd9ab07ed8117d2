//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in a process group of its own, so that
// stopping it also stops what it started (npx starts node, for example), and
// a terminal's Ctrl-C reaches the router, which stops its servers in order.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills whatever is left of the server's process group
// after the session closed (the server itself has been waited for).
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
