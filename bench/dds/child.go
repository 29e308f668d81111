package benchdds

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ChildCommand is the hidden rgaps-bench command that runs a DDS endpoint
// of the processes layout: `rgaps-bench dds-child <role> <domain> <topic>
// <size> <qos>`, role "send" or "recv", qos "lat" (the latency QoS,
// reporting each message), "last" (RELIABLE KEEP_LAST 10, ROS's default)
// or "all" (RELIABLE KEEP_ALL).
const ChildCommand = "dds-child"

// The child protocol, one line each way: the child prints "ready" once
// its endpoint exists and "matched" once it matched another; a sender
// writes one message, stamped now (Stamp), for each line <seq> on its
// stdin, and for "burst <duration>" as many as it can for that long, then
// prints "sent <messages> <start, Unix ns>"; a receiver prints "got <seq> <latency ns>" for each message
// (qos "lat") and answers "report" with "count <messages> <last message,
// Unix ns>". Both end when their stdin closes.

// childQoS is the QoS of a child's endpoint for its qos argument.
func childQoS(kind string) (qos.Profile, error) {
	switch kind {
	case "lat":
		return latQoS, nil
	case "last":
		return lastQoS, nil
	case "all":
		return tpQoS, nil
	}
	return qos.Profile{}, fmt.Errorf("unknown child QoS %q", kind)
}

// Stamp writes the send time (Unix ns) and seq into a StringCDR message
// (its first 16 characters; size ≥ MinSize).
func Stamp(msg []byte, seq uint64, at time.Time) {
	binary.LittleEndian.PutUint64(msg[8:], uint64(at.UnixNano()))
	binary.LittleEndian.PutUint64(msg[16:], seq)
}

// Stamped reads what Stamp wrote.
func Stamped(msg []byte) (seq uint64, at time.Time) {
	return binary.LittleEndian.Uint64(msg[16:]), time.Unix(0, int64(binary.LittleEndian.Uint64(msg[8:])))
}

// Child runs a DDS endpoint process (args after ChildCommand).
func Child(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("%s: want role, domain, topic, size, qos; got %q", ChildCommand, args)
	}
	role, topic, kind := args[0], args[2], args[4]
	domain, err1 := strconv.ParseUint(args[1], 10, 32)
	size, err2 := strconv.Atoi(args[3])
	q, err3 := childQoS(kind)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("%s: %w", ChildCommand, err)
	}
	if size < MinSize {
		return fmt.Errorf("%s: size %d below %d", ChildCommand, size, MinSize)
	}
	if err := dds.Load(); err != nil {
		return err
	}
	p, err := dds.Open(dds.Config{Domain: uint32(domain)})
	if err != nil {
		return err
	}
	defer p.Close()
	t, err := p.Topic(topic, typeName)
	if err != nil {
		return err
	}
	out := &lineWriter{}
	switch role {
	case "send":
		w, err := t.NewWriter(dds.EndpointOptions{QoS: q})
		if err != nil {
			return err
		}
		return sendChild(w, size, out)
	case "recv":
		r, err := t.NewReader(dds.EndpointOptions{QoS: q})
		if err != nil {
			return err
		}
		return recvChild(r, kind == "lat", out)
	}
	return fmt.Errorf("%s: unknown role %q", ChildCommand, role)
}

// lineWriter prints whole lines from several goroutines.
type lineWriter struct{ mu sync.Mutex }

func (l *lineWriter) println(a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Println(a...)
}

// waitMatched prints "ready", then "matched" once m reports a match.
func waitMatched(out *lineWriter, m func() (int, error)) error {
	out.println("ready")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := m()
		if err != nil {
			return err
		}
		if n > 0 {
			out.println("matched")
			return nil
		}
		if time.Now().After(end) {
			return errors.New("nothing matched within 30 s")
		}
	}
}

func sendChild(w *dds.Writer, size int, out *lineWriter) error {
	if err := waitMatched(out, w.Matched); err != nil {
		return err
	}
	msg := StringCDR(size)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if d, ok := strings.CutPrefix(in.Text(), "burst "); ok {
			if err := burst(w, msg, d, out); err != nil {
				return err
			}
			continue
		}
		seq, err := strconv.ParseUint(in.Text(), 10, 64)
		if err != nil {
			return fmt.Errorf("command %q: %w", in.Text(), err)
		}
		Stamp(msg, seq, time.Now())
		if err := w.Write(msg); err != nil {
			return err
		}
	}
	return in.Err()
}

// burst writes msg as fast as the writer takes it for the duration d
// and prints "sent <messages> <start, Unix ns>".
func burst(w *dds.Writer, msg []byte, d string, out *lineWriter) error {
	dur, err := time.ParseDuration(d)
	if err != nil {
		return fmt.Errorf("burst %q: %w", d, err)
	}
	start := time.Now()
	var n int64
	for end := start.Add(dur); time.Now().Before(end); {
		if err := w.Write(msg); err != nil {
			if errors.Is(err, dds.ErrTimeout) {
				continue // the reader is behind: the stream's pace
			}
			return err
		}
		n++
	}
	out.println("sent", n, start.UnixNano())
	return nil
}

func recvChild(r *dds.Reader, each bool, out *lineWriter) error {
	if err := waitMatched(out, r.Matched); err != nil {
		return err
	}
	var count, last atomic.Int64
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			if in.Text() == "report" {
				out.println("count", count.Load(), last.Load())
			}
		}
	}()
	for {
		select {
		case <-eof:
			return nil
		default:
		}
		s, ok, err := r.Take()
		if err != nil {
			return err
		}
		if !ok {
			if _, err := r.Wait(50 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		now := time.Now()
		count.Add(1)
		last.Store(now.UnixNano())
		if each && len(s.Data) >= MinSize {
			seq, at := Stamped(s.Data)
			out.println("got", seq, now.Sub(at).Nanoseconds())
		}
	}
}
