package status

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Listen opens a status socket (Socket or DDSSocket). It fails when
// another daemon of the domain serves it already.
func Listen(socket string) (net.Listener, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}
	return ln, nil
}

// Serve answers every connection to ln with one JSON object, get's
// Status, to processes of this user or root (others are refused and
// logged on log, which may be nil), until ln is closed.
func Serve(ln net.Listener, get func() Status, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if uc, ok := c.(*net.UnixConn); ok {
			answer(uc, get, log)
		} else {
			c.Close()
		}
	}
}

func answer(c *net.UnixConn, get func() Status, log *slog.Logger) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil || (cred.Uid != 0 && int(cred.Uid) != os.Getuid()) {
		uid := -1
		if cred != nil {
			uid = int(cred.Uid)
		}
		log.Warn("status query refused: other user", "uid", uid)
		return
	}
	json.NewEncoder(c).Encode(get())
}
