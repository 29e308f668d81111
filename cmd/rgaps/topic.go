package main

// rgaps topic list|info|pub|echo|hz, modelled on `ros2 topic`, and the
// helpers the demo shares with them: flag parsing, the session a command
// holds (context, node, interrupt handling) and the counter pattern of raw
// payloads. Message types, values and their printing: topictypes.go.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The default type of pub, and the type of raw payloads (no definition:
// echo prints a summary line of each). Any type whose definition is found
// (topictypes.go) is published from values and echoed decoded; any other
// can be published and echoed raw (-size, -raw).
const (
	typeString = "std_msgs/msg/String"
	typeBytes  = "rgaps/msg/Bytes"
)

func init() {
	register("topic", "inspect, publish, echo and time topics (list, info, pub, echo, hz)", runTopic)
}

type topicVerb struct {
	name, summary string
	run           func(args []string) error
}

// topicVerbs is filled in init: the verbs' run functions print the verb
// list, which would otherwise be an initialization cycle.
var topicVerbs []topicVerb

func init() {
	topicVerbs = []topicVerb{
		{"list", "topics with live endpoints in the domain", verb(parseList, runList)},
		{"info", "a topic's type, endpoints, QoS and data path", verb(parseInfo, runInfo)},
		{"pub", "publish messages", verb(parsePub, runPub)},
		{"echo", "print the messages of a topic", verb(parseEcho, runEcho)},
		{"hz", "print a topic's rate and bandwidth every second", verb(parseHz, runHz)},
	}
}

// verb is the run function of a verb that parses its options with parse
// (flag errors and -h go to stderr) and runs with run, writing to stdout.
func verb[O any](parse func(args []string, out io.Writer) (O, error), run func(o O, w io.Writer) error) func(args []string) error {
	return func(args []string) error {
		o, err := parse(args, os.Stderr)
		if err != nil {
			return err
		}
		return run(o, os.Stdout)
	}
}

func topicUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: rgaps topic <verb> [arguments]\n\nverbs:")
	for _, v := range topicVerbs {
		fmt.Fprintf(w, "  %-6s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w, "\nrun 'rgaps topic <verb> -h' for a verb's flags")
}

func runTopic(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		topicUsage(os.Stderr)
		return errUsage
	}
	for _, v := range topicVerbs {
		if v.name == args[0] {
			err := reportUsage("rgaps topic "+v.name, v.run(args[1:]))
			if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, flag.ErrHelp) {
				err = fmt.Errorf("%s: %w", v.name, err) // main prints "rgaps topic: "
			}
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "rgaps topic: unknown verb %q\n", args[0])
	topicUsage(os.Stderr)
	return errUsage
}

// ---- command-line handling --------------------------------------------------

// usageError is bad command-line input found after flag parsing (a missing
// or malformed argument, a flag value out of range). It wraps errUsage, so
// main exits 2 for it; reportUsage prints it first.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return errUsage }

func badUsage(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// reportUsage prints a usageError, which main would not print, and passes
// every error on.
func reportUsage(cmd string, err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "%s: %s\nrun '%s -h' for usage\n", cmd, ue.msg, cmd)
	}
	return err
}

// domainFlag is -domain: unset means ROS_DOMAIN_ID (or 0), as in
// rgaps.Options.
type domainFlag struct {
	set bool
	id  uint32
}

func (d *domainFlag) String() string {
	if d == nil || !d.set {
		return ""
	}
	return strconv.FormatUint(uint64(d.id), 10)
}

func (d *domainFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return errors.New("not a domain id")
	}
	d.set, d.id = true, uint32(n)
	return nil
}

// options are the context options for the domain (and an engine config).
func (d domainFlag) options(cfg zerocopy.Config) rgaps.Options {
	o := rgaps.Options{Engine: cfg}
	if d.set {
		id := d.id
		o.Domain = &id
	}
	return o
}

// sizeFlag is a byte count written as 4096, 64K, 4MiB, 1G...
type sizeFlag int64

func (s *sizeFlag) String() string {
	if s == nil {
		return "0"
	}
	return formatSize(int64(*s))
}

func (s *sizeFlag) Set(v string) error {
	n, err := zerocopy.ParseSize(v)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return errors.New("not a positive size (examples: 4096, 64K, 4MiB)")
	}
	*s = sizeFlag(n)
	return nil
}

// formatSize writes n exactly, with the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.suf
		}
	}
	return strconv.FormatInt(n, 10)
}

// humanBytes is n rounded for people: "1.5 MiB".
func humanBytes[T int | int64 | uint64](n T) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if f < 1024 || u == "GiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", n)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1024
	}
	panic("unreachable")
}

// cmdFlags is the flag set of one command, with the flags every command
// has.
type cmdFlags struct {
	*flag.FlagSet
	domain domainFlag
}

// newFlags makes the flag set of command name (e.g. "rgaps topic echo");
// synopsis is the usage line after the name. Flag errors and -h go to out.
func newFlags(name, synopsis string, out io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	c := &cmdFlags{FlagSet: fs}
	fs.Var(&c.domain, "domain", "ROS domain `id` (default: ROS_DOMAIN_ID, or 0)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s\n\nflags (before or after the arguments):\n", name, synopsis)
		fs.PrintDefaults()
	}
	return c
}

// parse parses flags and positional arguments in any order, as ros2 does
// (`echo /t -n 3` and `echo -n 3 /t` are the same); after "--" everything
// is positional. It returns flag.ErrHelp for -h and errUsage for a flag
// error (the flag package printed both already), and a usageError unless
// the number of positional arguments is within [min, max].
func (c *cmdFlags) parse(args []string, min, max int) ([]string, error) {
	var pos []string
	for {
		if err := c.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		rest := c.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < min:
		return nil, badUsage("missing argument")
	case len(pos) > max:
		return nil, badUsage("too many arguments: %q", pos[max:])
	}
	return pos, nil
}

// target is what the options of a verb begin with: the domain and, but
// for list, the topic (resolved).
type target struct {
	domain domainFlag
	topic  string
}

// parseTopic is parse for a verb whose first positional argument is a
// topic (at most max in all): it also fills t.
func (c *cmdFlags) parseTopic(args []string, max int, t *target) ([]string, error) {
	pos, err := c.parse(args, 1, max)
	if err != nil {
		return nil, err
	}
	t.domain = c.domain
	t.topic, err = resolveTopic(pos[0])
	return pos, err
}

// positionalType accepts ros2's `echo <topic> <type>` (and `pub <topic>
// <type> <data>`) besides -type.
func positionalType(flagType string, pos []string) (string, error) {
	if len(pos) < 2 {
		return flagType, nil
	}
	if flagType != "" && flagType != pos[1] {
		return "", badUsage("type given twice: %q and -type %q", pos[1], flagType)
	}
	return pos[1], nil
}

// resolveTopic expands a topic name as `ros2 topic` does for a node in the
// root namespace: "chatter" is "/chatter".
func resolveTopic(name string) (string, error) {
	full, err := names.ExpandTopicName(name, "rgaps", "/")
	if err != nil {
		return "", badUsage("%v", err)
	}
	return full, nil
}

// profileByName reads -qos.
func profileByName(name string) (qos.Profile, error) {
	p, err := qos.ByName(name)
	if err != nil {
		return p, badUsage("unknown QoS profile %q (one of %s)", name, strings.Join(qos.Names(), ", "))
	}
	return p, nil
}

// ---- sessions ---------------------------------------------------------------

// session is what a command that creates endpoints holds: a context, one
// node, and a guard condition that SIGINT or SIGTERM raises, so that every
// wait of the command ends on an interrupt and the command can close
// everything (no shared-memory segment stays behind).
type session struct {
	ctx  *rgaps.Context
	node *rgaps.Node
	stop *zerocopy.GuardCondition
	sigs chan os.Signal
	pipe chan os.Signal // SIGPIPE, caught so that a closed stdout is an error (outputDone), not death
	done chan struct{}  // closed by close: the signal goroutine ends
	gone chan struct{}  // closed by the signal goroutine when it ends
}

// openSession joins the domain and registers a node called name_<pid>
// (names starting with "_" are hidden, as ros2's own CLI nodes are).
func openSession(o rgaps.Options, name string) (*session, error) {
	ctx, err := rgaps.NewContext(o)
	if err != nil {
		return nil, fmt.Errorf("joining domain: %w", err)
	}
	node, err := ctx.NewNode(fmt.Sprintf("%s_%d", name, os.Getpid()), "/")
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("creating node: %w", err)
	}
	s := &session{ctx: ctx, node: node, stop: ctx.NewGuardCondition(),
		sigs: make(chan os.Signal, 1), pipe: make(chan os.Signal, 1), done: make(chan struct{}), gone: make(chan struct{})}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM)
	// Without this, `rgaps topic echo /t | head` would be killed by the
	// write after head exits, leaving its endpoint for a janitor to reclaim.
	signal.Notify(s.pipe, syscall.SIGPIPE)
	go func() {
		defer close(s.gone)
		select {
		case <-s.sigs:
			// A second signal gets the default action: a shutdown that
			// hangs can still be killed from the terminal.
			signal.Stop(s.sigs)
			s.stop.Trigger()
		case <-s.done:
		}
	}()
	return s, nil
}

func (s *session) close() error {
	signal.Stop(s.sigs)
	signal.Stop(s.pipe)
	close(s.done)
	<-s.gone // it may be raising stop: close that only after
	s.stop.Close()
	if err := s.ctx.Close(); err != nil {
		return fmt.Errorf("leaving domain: %w", err)
	}
	return nil
}

// withSession runs fn in a session (see openSession), which it closes
// after fn, joining the errors of both.
func withSession(o rgaps.Options, name string, fn func(s *session) error) (err error) {
	s, err := openSession(o, name)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	return fn(s)
}

// withGraph joins domain d without a node (list and info create no
// endpoint) and runs fn with the topics in the graph.
func withGraph(d domainFlag, fn func(ctx *rgaps.Context, g graphView) error) error {
	ctx, err := rgaps.NewContext(d.options(zerocopy.Config{}))
	if err != nil {
		return fmt.Errorf("joining domain: %w", err)
	}
	defer ctx.Close()
	topics, err := ctx.Topics()
	if err != nil {
		return fmt.Errorf("reading the graph: %w", err)
	}
	g := graphView{topics: topics}
	// Endpoints on other hosts and of ROS 2 nodes on DDS, from this host's
	// daemon when it bridges or runs the DDS gateway.
	st, err := status.Query(ctx.Engine().Config())
	if errors.Is(err, status.ErrVersion) {
		fmt.Fprintf(os.Stderr, "rgaps: other hosts and DDS nodes left out: %v\n", err)
	}
	if err == nil {
		g.status = &st
		for _, p := range st.Peers {
			g.remote = append(g.remote, p.Endpoints...)
		}
		if st.DDS != nil {
			g.remote = append(g.remote, st.DDS.Endpoints...)
		}
		for _, e := range g.remote {
			if !slices.ContainsFunc(g.topics, func(t zerocopy.TopicInfo) bool { return t.Name == e.Topic }) {
				g.topics = append(g.topics, zerocopy.TopicInfo{Name: e.Topic, Type: e.Type, Path: e.Path})
			}
		}
		slices.SortFunc(g.topics, func(a, b zerocopy.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	}
	return fn(ctx, g)
}

// graphView is the graph the topic tools show: this host's topics and,
// when a daemon reports them, the endpoints on other hosts (bridge) and of
// ROS 2 nodes on DDS (Path status.PathDDS, Host their participant).
type graphView struct {
	topics []zerocopy.TopicInfo
	remote []status.RemoteEndpoint
	status *status.Status // the daemon's answer; nil when none
}

func (s *session) interrupted() bool { return s.stop.Ready() }

// outputDone tells whether a write error ends a command quietly: stdout
// is a pipe whose reader went away, which is how `| head` stops a command.
// Other write errors are returned, with context.
func outputDone(err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if errors.Is(err, syscall.EPIPE) {
		return true, nil
	}
	return true, fmt.Errorf("writing output: %w", err)
}

// sleep waits d; it returns false, early, when the command is interrupted.
func (s *session) sleep(d time.Duration) bool {
	if s.interrupted() {
		return false
	}
	if d <= 0 {
		return true
	}
	err := s.ctx.Wait([]zerocopy.Waitable{s.stop}, make([]bool, 1), d)
	return errors.Is(err, zerocopy.ErrTimeout)
}

// topicType returns the type of topic in the graph. When the topic has no
// endpoint yet it waits for one, telling the user so on stderr, as
// `ros2 topic echo` does; ok is false when interrupted meanwhile.
func (s *session) topicType(topic string) (typ string, ok bool, err error) {
	gc := s.ctx.Engine().NewGraphCondition()
	items, ready := []zerocopy.Waitable{gc, s.stop}, make([]bool, 2)
	warned := false
	for {
		gc.Reset() // before reading, so that no change is missed
		topics, err := s.ctx.Topics()
		if err != nil {
			return "", false, fmt.Errorf("reading the graph: %w", err)
		}
		if i := slices.IndexFunc(topics, func(t zerocopy.TopicInfo) bool { return t.Name == topic }); i >= 0 {
			return topics[i].Type, true, nil
		}
		if !warned {
			fmt.Fprintf(os.Stderr, "waiting for topic %s to appear (-type subscribes at once)\n", topic)
			warned = true
		}
		// The timeout only bounds the cost of a missed wake-up.
		s.ctx.Wait(items, ready, time.Second)
		if s.interrupted() {
			return "", false, nil
		}
	}
}

// subscriptionQoS is the profile echo and hz subscribe with: the named one,
// or, like ros2, one adapted to the topic's publishers (best available:
// reliable only if they all are, transient local only if they all are), so
// that the tools match whatever publishes. Without publishers it is the
// default profile.
func (s *session) subscriptionQoS(topic, name string) (qos.Profile, error) {
	if name != "" {
		return profileByName(name)
	}
	eps, err := s.ctx.Endpoints(topic)
	if err != nil {
		return qos.Profile{}, fmt.Errorf("reading the graph: %w", err)
	}
	var pubs []qos.Profile
	for _, e := range eps {
		if e.Kind == zerocopy.KindPublisher {
			pubs = append(pubs, e.QoS)
		}
	}
	if len(pubs) == 0 {
		return qos.Default(), nil
	}
	return qos.BestAvailable().BestAvailableForSubscription(pubs), nil
}

// subscribe creates the subscription of echo and hz: typ "" takes the type
// from the graph. It returns the type subscribed to; sub is nil when the
// command was interrupted before the subscription existed.
func (s *session) subscribe(topic, typ, qosName string) (*zerocopy.Subscription, string, error) {
	if typ == "" {
		t, ok, err := s.topicType(topic)
		if err != nil || !ok {
			return nil, "", err
		}
		typ = t
	}
	q, err := s.subscriptionQoS(topic, qosName)
	if err != nil {
		return nil, "", err
	}
	sub, err := s.node.NewSubscription(topic, typ, q)
	if err != nil {
		return nil, "", fmt.Errorf("subscribing: %w", err)
	}
	return sub, typ, nil
}

// subscribeOpts are the options echo and hz share: the topic, its type
// (-type or ros2's second argument; "" takes it from the graph) and -qos
// ("" adapts to the topic's publishers).
type subscribeOpts struct {
	target
	typ     string
	qosName string
}

// flags adds -type and -qos to fs, with the verb's help texts.
func (o *subscribeOpts) flags(fs *cmdFlags, typeHelp, qosHelp string) {
	fs.StringVar(&o.typ, "type", "", typeHelp)
	fs.StringVar(&o.qosName, "qos", "", qosHelp)
}

// parse parses `<topic> [type]` and the flags.
func (o *subscribeOpts) parse(fs *cmdFlags, args []string) error {
	pos, err := fs.parseTopic(args, 2, &o.target)
	if err != nil {
		return err
	}
	o.typ, err = positionalType(o.typ, pos)
	return err
}

// checkQoS checks -qos; verbs call it after checking their own flags.
func (o *subscribeOpts) checkQoS() error {
	if o.qosName == "" {
		return nil
	}
	_, err := profileByName(o.qosName)
	return err
}

// run runs fn in a session called name, with the subscription (see
// subscribe); an interrupt before the subscription exists ends it quietly.
func (o *subscribeOpts) run(name string, fn func(s *session, sub *zerocopy.Subscription, typ string) error) error {
	return withSession(o.domain.options(zerocopy.Config{}), name, func(s *session) error {
		sub, typ, err := s.subscribe(o.topic, o.typ, o.qosName)
		if err != nil || sub == nil {
			return err
		}
		return fn(s, sub, typ)
	})
}

// take takes the next message of sub and hands it to fn, then returns it
// to the pool; took is false when no message is queued.
func take(sub *zerocopy.Subscription, fn func(smp *zerocopy.Sample)) (took bool, err error) {
	smp, err := sub.Take()
	if errors.Is(err, zerocopy.ErrNoData) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taking a message: %w", err)
	}
	fn(smp)
	if err := smp.Return(); err != nil {
		return false, fmt.Errorf("returning a message: %w", err)
	}
	return true, nil
}
