// Package pause is how the bridge's goroutines pause between polls: timers
// that end on time in an idle process (Timer, Sleep; timer.go says why Go's
// do not), and a yield that lets other processes' threads run (Yield).
// Nothing here knows the bridge: it waits and yields.
package pause

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Yield is one pass of a polling loop's spin: it lets the process's other
// goroutines run (runtime.Gosched) and then the machine's other threads
// (sched_yield(2)). runtime.Gosched alone leaves the thread on its
// processor, and on a host with few cores a bridge's pollers spinning so
// keep the threads they wake (the other side of a link, the subscriber
// process a message is for) waiting for a processor for up to the
// kernel's time slice. sched_yield returns at once when nothing else is
// runnable there.
func Yield() {
	runtime.Gosched()
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
