package main

// rgaps topic pub: values of any described type, or raw payloads.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/rmw-rgaps/rmw_rgaps/internal/pattern"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ---- pub --------------------------------------------------------------------

type pubOpts struct {
	target
	typ     string
	rate    float64
	times   int
	size    int64 // raw payload size (counter pattern); 0 = a message from values
	raw     bool  // publish the values' bytes as they are
	qosName string
	qos     qos.Profile
	wait    time.Duration
	values  string          // the values argument: YAML flow syntax, or raw bytes with -raw
	msg     *schema.Message // the type's definition (nil for raw payloads)
	prefix  int             // payloadPrefix(msg)
}

func parsePub(args []string, out io.Writer) (pubOpts, error) {
	var o pubOpts
	var size sizeFlag
	var wait float64
	var once bool
	fs := newFlags("rgaps topic pub", "<topic> [type] [values] [-type T] [-rate HZ] [-times N] [-size BYTES | -raw] [-qos NAME] [-wait S]\n\n"+
		"values are written as for ros2 topic pub: \"{data: hello}\", \"{linear: {x: 0.5}, angular: {z: 1.0}}\",\n"+
		"\"{header: {frame_id: cam}, height: 2, width: 3, encoding: rgb8, data: [1, 2, 3]}\"; a message of one\n"+
		"field takes its value alone (hello, 5); none publishes the defaults", out)
	fs.StringVar(&o.typ, "type", "", "message `type` (default "+typeString+"; "+typeBytes+" with -size); any type whose .msg is embedded or on "+
		interfacesEnv+" or AMENT_PREFIX_PATH")
	fs.Float64Var(&o.rate, "rate", 1, "messages per second; 0 publishes as fast as possible")
	fs.IntVar(&o.times, "times", 0, "publish this many messages, then exit; 0 publishes until interrupted")
	fs.BoolVar(&once, "once", false, "publish one message (-times 1)")
	fs.Var(&size, "size", "raw payload `size` (4096, 64K, 4MiB), filled with a counter pattern; any type")
	fs.BoolVar(&o.raw, "raw", false, "publish the values argument's bytes as they are, not encoded; any type")
	fs.StringVar(&o.qosName, "qos", "default", "QoS profile: "+strings.Join(qos.Names(), ", "))
	fs.Float64Var(&wait, "wait", 1, "wait up to this many `seconds` for a subscription to match before the first message")
	pos, err := fs.parseTopic(args, 3, &o.target)
	if err != nil {
		return o, err
	}
	o.size = int64(size)
	switch {
	case len(pos) == 3: // ros2's form: pub <topic> <type> <values>
		if o.typ, err = positionalType(o.typ, pos); err != nil {
			return o, err
		}
		o.values = pos[2]
	case len(pos) == 2 && o.typ == "" && typeNameRE.MatchString(pos[1]): // pub <topic> <type>
		o.typ = pos[1]
	case len(pos) == 2:
		o.values = pos[1]
	}
	if o.typ == "" {
		o.typ = typeString
		if o.size > 0 {
			o.typ = typeBytes
		}
	}
	switch {
	case strings.ContainsFunc(o.typ, unicode.IsSpace):
		return o, badUsage("bad type %q", o.typ)
	case o.size > 0 && o.raw:
		return o, badUsage("give either -size or -raw, not both")
	case o.size > 0 && o.values != "":
		return o, badUsage("-size publishes a counter pattern: give no values with it")
	case o.raw && o.values == "":
		return o, badUsage("-raw publishes the values argument's bytes: give it")
	case math.IsNaN(o.rate) || math.IsInf(o.rate, 0) || o.rate < 0:
		return o, badUsage("-rate %v: must be a number >= 0", o.rate)
	case o.times < 0:
		return o, badUsage("-times %d: must be >= 0", o.times)
	case math.IsNaN(wait) || wait < 0 || wait > 1e6:
		return o, badUsage("-wait %v: must be seconds >= 0", wait)
	}
	if once {
		o.times = 1
	}
	o.wait = time.Duration(wait * float64(time.Second))
	if o.qos, err = profileByName(o.qosName); err != nil {
		return o, err
	}
	if o.size > 0 || o.raw {
		return o, nil
	}
	// A message from values: the type must be known, and the values right
	// for it, before anything is created.
	if o.msg, err = resolveMessage(o.typ); err != nil {
		if errors.Is(err, errUnknownType) {
			return o, badUsage("%v\n(-size publishes a raw counter pattern and -raw the values' bytes, for any type)", err)
		}
		return o, err
	}
	o.typ = o.msg.FullName() // std_msgs/String is std_msgs/msg/String's topic
	o.prefix = payloadPrefix(o.msg)
	if _, err := parseValues(o.msg, o.values); err != nil {
		return o, badUsage("values for %s: %v", o.typ, strings.TrimPrefix(err.Error(), "schema: "))
	}
	return o, nil
}

func runPub(o pubOpts, w io.Writer) error {
	return withSession(o.domain.options(zerocopy.Config{}), "_rgaps_pub", func(s *session) error {
		return publish(s, o, w)
	})
}

// publish is pub in session s.
func publish(s *session, o pubOpts, w io.Writer) error {
	p, err := s.node.NewPublisher(o.topic, o.typ, o.qos)
	if err != nil {
		return fmt.Errorf("creating publisher: %w", err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "publisher: %s [%s] (%s), beginning loop\n", o.topic, o.typ, o.qosName)
	if done, err := outputDone(bw.Flush()); done {
		return err
	}
	// Volatile messages published before a subscription exists reach no
	// one: give subscriptions that are starting a moment to match.
	for deadline := time.Now().Add(o.wait); p.Matched() == 0 && time.Now().Before(deadline); {
		if !s.sleep(10 * time.Millisecond) {
			return nil
		}
	}
	var period time.Duration
	if o.rate > 0 {
		period = time.Duration(float64(time.Second) / o.rate)
	}
	next := time.Now()
	for i := 1; o.times == 0 || i <= o.times; i++ {
		if s.interrupted() {
			return nil
		}
		what, err := publishOne(p, o, uint64(i))
		switch {
		case errors.Is(err, zerocopy.ErrPoolExhausted), errors.Is(err, zerocopy.ErrQueueFull):
			// A slow reader, not a broken topic: say so and go on, as a
			// periodic publisher does.
			fmt.Fprintf(os.Stderr, "message #%d not published: %v\n", i, err)
		case err != nil:
			return fmt.Errorf("publishing message #%d: %w", i, err)
		default:
			fmt.Fprintf(bw, "publishing #%d: %s\n", i, what)
		}
		if done, err := outputDone(bw.Flush()); done {
			return err
		}
		if o.times != 0 && i == o.times {
			break
		}
		next = next.Add(period)
		if now := time.Now(); next.Before(now.Add(-period)) {
			next = now // fell behind (slow pool, stopped process): do not burst
		}
		if !s.sleep(time.Until(next)) {
			return nil
		}
	}
	return nil
}

// publishOne builds message i in a loan (in place: no copy) and publishes
// it; it returns what pub prints for it.
func publishOne(p *zerocopy.Publisher, o pubOpts, i uint64) (string, error) {
	var v *schema.Struct
	size := int(o.size)
	switch {
	case o.raw:
		size = len(o.values)
	case o.msg != nil:
		// parsed again for every message: "now" and "auto" stamp each one
		var err error
		if v, err = parseValues(o.msg, o.values); err != nil {
			return "", err
		}
		if size, err = payloadSize(v, o.prefix); err != nil {
			return "", err
		}
	}
	loan, err := p.Loan(size)
	if err != nil {
		return "", err
	}
	b := loan.Bytes()
	if b == nil {
		loan.Discard()
		return "", fmt.Errorf("%w: the topic's pool is not in host memory", zerocopy.ErrNotSupported)
	}
	var what string
	switch {
	case v != nil:
		if err := encodeInto(b, v, o.prefix); err != nil {
			loan.Discard()
			return "", err
		}
		what = schema.FlowString(v, 16)
	case o.raw:
		copy(b, o.values)
		what = fmt.Sprintf("%d bytes", len(b))
	default:
		pattern.Fill(b, i)
		what = fmt.Sprintf("%d bytes", len(b))
	}
	return what, loan.Publish()
}
