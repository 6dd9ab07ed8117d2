package auth

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads the credentials of the process at the other end of the Unix
// socket connection c.
func peerOf(c net.Conn) (UnixPeer, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return UnixPeer{}, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return UnixPeer{}, false
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return UnixPeer{}, false
	}
	return UnixPeer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, true
}
