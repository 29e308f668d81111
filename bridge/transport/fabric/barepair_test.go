//go:build cgo && !nofabric

package fabric

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

const (
	roleBareRecv = "fabric-bare-recv"
	roleBareSend = "fabric-bare-send"
)

func init() {
	// bare-recv NODE SIZE ITERS: listen, print "at ADDR RADDR KEY LEN",
	// receive, print "last NS", close on SIGUSR1 (once the sender stopped:
	// it progresses the transfer until then).
	testutil.Role(roleBareRecv, func(a []string) error {
		closeSig := make(chan os.Signal, 1)
		signal.Notify(closeSig, syscall.SIGUSR1)
		size, _ := strconv.Atoi(a[1])
		iters, _ := strconv.Atoi(a[2])
		r, err := ListenBare("tcp", size, Options{Node: a[0], Timeout: 20 * time.Second})
		if err != nil {
			return err
		}
		defer r.Close()
		d := r.Region()
		fmt.Println("at", r.Addr(), d.Addr, d.Key, d.Len)
		last, err := r.Receive(iters)
		if err != nil {
			return err
		}
		fmt.Println("last", last)
		<-closeSig
		return nil
	})
	// bare-send NODE ADDR RADDR KEY LEN SIZE ITERS: send, keep the
	// transfer going until SIGUSR1, print "first NS".
	testutil.Role(roleBareSend, func(a []string) error {
		var n [5]uint64
		for i := range n {
			n[i], _ = strconv.ParseUint(a[2+i], 10, 64)
		}
		stopSig := make(chan os.Signal, 1)
		signal.Notify(stopSig, syscall.SIGUSR1)
		s, err := DialBare("tcp", a[1], int(n[3]), Options{Node: a[0], Timeout: 20 * time.Second})
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Println("connected")
		stop := make(chan struct{})
		go func() { <-stopSig; close(stop) }()
		first, err := s.Send(int(n[4]), transport.RemoteRegion{Addr: n[0], Key: n[1], Len: n[2]}, stop)
		if err != nil {
			return err
		}
		fmt.Println("first", first)
		return nil
	})
}

// The bare fi_writedata loop split over two processes in two network
// namespaces: every write's immediate reaches the receiver, after the
// sender's first post on the clock both share.
func TestBarePairAcrossNamespaces(t *testing.T) {
	h := testutil.NewHosts(t)
	const size, iters = 64 << 10, 200
	recv := testutil.StartIn(t, h.NS[1], roleBareRecv, h.Addr[1], strconv.Itoa(size), strconv.Itoa(iters))
	at := strings.Fields(recv.Expect(t, "at ", 30*time.Second))
	send := testutil.StartIn(t, h.NS[0], roleBareSend, append([]string{h.Addr[0]}, append(at[1:], strconv.Itoa(size), strconv.Itoa(iters))...)...)
	send.Expect(t, "connected", 30*time.Second)
	last, _ := strconv.ParseInt(strings.Fields(recv.Expect(t, "last ", time.Minute))[1], 10, 64)
	send.Cmd.Process.Signal(syscall.SIGUSR1)
	first, _ := strconv.ParseInt(strings.Fields(send.Expect(t, "first ", 30*time.Second))[1], 10, 64)
	if err := send.Wait(30 * time.Second); err != nil {
		t.Fatalf("sender: %v: %s", err, send.Stderr())
	}
	recv.Cmd.Process.Signal(syscall.SIGUSR1)
	if first <= 0 || last <= first {
		t.Fatalf("first post at %d, last immediate at %d", first, last)
	}
	if err := recv.Wait(30 * time.Second); err != nil {
		t.Fatalf("receiver: %v: %s", err, recv.Stderr())
	}
	t.Logf("%d × %d KiB between namespaces in %v", iters, size>>10, time.Duration(last-first))
	if _, err := ListenBare("tcp", 0, Options{}); err == nil {
		t.Error("a bare loop of 0-byte writes was accepted")
	}
}
