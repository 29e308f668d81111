package main

// rgaps topic echo: messages decoded as ros2 topic echo prints them, or raw summaries.

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ---- payloads ---------------------------------------------------------------

// summaryLine is how echo prints a raw message (-raw, or a type without a
// definition).
func summaryLine(seq uint64, b []byte) string {
	return fmt.Sprintf("seq=%d size=%d bytes first=%s", seq, len(b), hex.EncodeToString(b[:min(16, len(b))]))
}

// ---- echo -------------------------------------------------------------------

type echoOpts struct {
	subscribeOpts
	n      int
	raw    bool
	format echoFormat
}

func parseEcho(args []string, out io.Writer) (echoOpts, error) {
	var o echoOpts
	fs := newFlags("rgaps topic echo", "<topic> [type] [-type T] [-n N] [-qos NAME] [-raw] [-truncate-length N] [-no-arr] [-no-str] [-flow-style]\n\n"+
		"prints each message as ros2 topic echo does (block YAML, then ---); a type needs its .msg\n"+
		"(embedded, or on "+interfacesEnv+" or AMENT_PREFIX_PATH) unless -raw", out)
	o.flags(fs, "message `type` (default: the topic's type in the graph, waiting for the topic to appear)",
		"QoS profile (default: adapted to the topic's publishers): "+strings.Join(qos.Names(), ", "))
	fs.IntVar(&o.n, "n", 0, "exit after this many messages; 0 echoes until interrupted")
	fs.BoolVar(&o.raw, "raw", false, "print a summary line (sequence, size, first bytes) of each message instead of decoding it; any type")
	fs.IntVar(&o.format.opt.TruncateLength, "truncate-length", 128, "print at most `N` elements of an array and bytes of a string; 0 prints all")
	fs.BoolVar(&o.format.opt.NoArr, "no-arr", false, "print arrays as their type and length")
	fs.BoolVar(&o.format.opt.NoStr, "no-str", false, "print strings as their length")
	fs.BoolVar(&o.format.flow, "flow-style", false, "print each message on one line, in the flow syntax pub takes")
	if err := o.parse(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.n < 0:
		return o, badUsage("-n %d: must be >= 0", o.n)
	case o.format.opt.TruncateLength < 0:
		return o, badUsage("-truncate-length %d: must be >= 0", o.format.opt.TruncateLength)
	}
	if err := o.checkQoS(); err != nil {
		return o, err
	}
	if o.typ != "" && !o.raw && o.typ != typeBytes {
		m, err := resolveMessage(o.typ)
		if err != nil {
			return o, echoTypeError(err)
		}
		o.typ = m.FullName()
	}
	return o, nil
}

// echoTypeError is the error of echo for a type it cannot decode: a usage
// error for -type, a plain one for the topic's type in the graph.
func echoTypeError(err error) error {
	const hint = "(-raw prints a summary line of each message, for any type)"
	if errors.Is(err, errUnknownType) {
		return badUsage("cannot decode: %v\n%s", err, hint)
	}
	return err
}

func runEcho(o echoOpts, w io.Writer) error {
	return o.run("_rgaps_echo", func(s *session, sub *zerocopy.Subscription, typ string) error {
		var m *schema.Message // nil: summary lines
		prefix := 0           // bytes before the CDR: the plain layout's
		if !o.raw && typ != typeBytes {
			var err error
			if m, err = resolveMessage(typ); err != nil {
				return fmt.Errorf("cannot decode the topic's type: %w\n(-raw prints a summary line of each message, for any type)", err)
			}
			prefix = payloadPrefix(m)
		}
		bw := bufio.NewWriter(w)
		items, ready := []zerocopy.Waitable{sub, s.stop}, make([]bool, 2)
		var lost uint64
		for count := 0; o.n == 0 || count < o.n; {
			took, err := take(sub, func(smp *zerocopy.Sample) {
				if l := sub.Lost(); l != lost {
					fmt.Fprintf(os.Stderr, "%d message(s) lost (queue overflow)\n", l-lost)
					lost = l
				}
				b := smp.Bytes()
				if m == nil {
					fmt.Fprintln(bw, summaryLine(smp.Info().Sequence, b))
					return
				}
				if derr := o.format.printMessage(bw, m, prefix, b, smp.Meta()); derr != nil {
					// Said on stderr, with the first bytes; the echo goes
					// on, as a subscriber would.
					fmt.Fprintf(os.Stderr, "not a valid %s (%v): %s\n", typ, strings.TrimPrefix(derr.Error(), "schema: "), summaryLine(smp.Info().Sequence, b))
				}
			})
			if err != nil {
				return err
			}
			if took {
				count++
				continue
			}
			// Flush when caught up: a burst is written at once, and a
			// message is on the screen as soon as nothing else is queued.
			if done, err := outputDone(bw.Flush()); done {
				return err
			}
			if s.interrupted() {
				return nil
			}
			s.ctx.Wait(items, ready, -1)
		}
		_, err := outputDone(bw.Flush())
		return err
	})
}
