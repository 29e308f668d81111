package main

// rgaps topic list|info|pub|echo|hz, modelled on `ros2 topic`, and the
// helpers the demo shares with them: flag parsing, the session a command
// holds (context, node, interrupt handling) and the counter pattern of raw
// payloads. Message types, values and their printing: topictypes.go.

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/internal/pattern"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
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
func (d domainFlag) options(cfg rgaps.EngineConfig) rgaps.Options {
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
	stop *rgaps.GuardCondition
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
	ctx, err := rgaps.NewContext(d.options(rgaps.EngineConfig{}))
	if err != nil {
		return fmt.Errorf("joining domain: %w", err)
	}
	defer ctx.Close()
	topics, err := ctx.Topics()
	if err != nil {
		return fmt.Errorf("reading the graph: %w", err)
	}
	g := graphView{topics: topics}
	// Endpoints on other hosts, from this host's daemon when it bridges.
	st, err := status.Query(ctx.Engine().Config())
	if errors.Is(err, status.ErrVersion) {
		fmt.Fprintf(os.Stderr, "rgaps: other hosts left out: %v\n", err)
	}
	if err == nil {
		g.bridged = true
		for _, p := range st.Peers {
			for _, e := range p.Endpoints {
				g.remote = append(g.remote, e)
				if !slices.ContainsFunc(g.topics, func(t rgaps.TopicInfo) bool { return t.Name == e.Topic }) {
					g.topics = append(g.topics, rgaps.TopicInfo{Name: e.Topic, Type: e.Type, Path: e.Path})
				}
			}
		}
		slices.SortFunc(g.topics, func(a, b rgaps.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	}
	return fn(ctx, g)
}

// graphView is the graph the topic tools show: this host's topics and, when
// a bridge daemon runs, the endpoints on other hosts it knows of.
type graphView struct {
	topics  []rgaps.TopicInfo
	remote  []status.RemoteEndpoint
	bridged bool
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
	err := s.ctx.Wait([]rgaps.Waitable{s.stop}, make([]bool, 1), d)
	return errors.Is(err, rgaps.ErrTimeout)
}

// topicType returns the type of topic in the graph. When the topic has no
// endpoint yet it waits for one, telling the user so on stderr, as
// `ros2 topic echo` does; ok is false when interrupted meanwhile.
func (s *session) topicType(topic string) (typ string, ok bool, err error) {
	gc := s.ctx.Engine().NewGraphCondition()
	items, ready := []rgaps.Waitable{gc, s.stop}, make([]bool, 2)
	warned := false
	for {
		gc.Reset() // before reading, so that no change is missed
		topics, err := s.ctx.Topics()
		if err != nil {
			return "", false, fmt.Errorf("reading the graph: %w", err)
		}
		if i := slices.IndexFunc(topics, func(t rgaps.TopicInfo) bool { return t.Name == topic }); i >= 0 {
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
func (s *session) subscribe(topic, typ, qosName string) (*rgaps.Subscription, string, error) {
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
func (o *subscribeOpts) run(name string, fn func(s *session, sub *rgaps.Subscription, typ string) error) error {
	return withSession(o.domain.options(rgaps.EngineConfig{}), name, func(s *session) error {
		sub, typ, err := s.subscribe(o.topic, o.typ, o.qosName)
		if err != nil || sub == nil {
			return err
		}
		return fn(s, sub, typ)
	})
}

// take takes the next message of sub and hands it to fn, then returns it
// to the pool; took is false when no message is queued.
func take(sub *rgaps.Subscription, fn func(smp *rgaps.Sample)) (took bool, err error) {
	smp, err := sub.Take()
	if errors.Is(err, rgaps.ErrNoData) {
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

// ---- payloads ---------------------------------------------------------------

// summaryLine is how echo prints a raw message (-raw, or a type without a
// definition).
func summaryLine(seq uint64, b []byte) string {
	return fmt.Sprintf("seq=%d size=%d bytes first=%s", seq, len(b), hex.EncodeToString(b[:min(16, len(b))]))
}

// ---- list -------------------------------------------------------------------

type listOpts struct {
	domain    domainFlag
	types     bool
	all       bool
	countOnly bool
}

func parseList(args []string, out io.Writer) (listOpts, error) {
	var o listOpts
	fs := newFlags("rgaps topic list", "[-t] [-a] [-c]", out)
	fs.BoolVar(&o.types, "t", false, "show each topic's type")
	fs.BoolVar(&o.all, "a", false, "include hidden topics (a name token starting with '_')")
	fs.BoolVar(&o.countOnly, "c", false, "print only the number of topics")
	if _, err := fs.parse(args, 0, 0); err != nil {
		return o, err
	}
	o.domain = fs.domain
	return o, nil
}

func runList(o listOpts, w io.Writer) error {
	return withGraph(o.domain, func(_ *rgaps.Context, g graphView) error {
		topics := slices.DeleteFunc(g.topics, func(t rgaps.TopicInfo) bool { return !o.all && names.IsHidden(t.Name) })
		if o.countOnly {
			_, err := fmt.Fprintln(w, len(topics))
			return err
		}
		bw := bufio.NewWriter(w)
		for _, t := range topics {
			if o.types {
				fmt.Fprintf(bw, "%s [%s]\n", t.Name, t.Type)
			} else {
				fmt.Fprintln(bw, t.Name)
			}
		}
		return bw.Flush()
	})
}

// ---- info -------------------------------------------------------------------

type infoOpts struct {
	target
	verbose bool
}

func parseInfo(args []string, out io.Writer) (infoOpts, error) {
	var o infoOpts
	fs := newFlags("rgaps topic info", "<topic> [-v]", out)
	fs.BoolVar(&o.verbose, "v", false, "describe every endpoint: node, GID, QoS, process, data path")
	_, err := fs.parseTopic(args, 1, &o.target)
	return o, err
}

func runInfo(o infoOpts, w io.Writer) error {
	return withGraph(o.domain, func(ctx *rgaps.Context, g graphView) error {
		return printInfo(ctx, g, o, w)
	})
}

// printInfo is info for the topics read from ctx's graph, with the
// endpoints on other hosts the bridge daemon reports (their data path is
// the bridge's transport: fabric:<provider> or tcp).
func printInfo(ctx *rgaps.Context, g graphView, o infoOpts, w io.Writer) error {
	i := slices.IndexFunc(g.topics, func(t rgaps.TopicInfo) bool { return t.Name == o.topic })
	if i < 0 {
		return fmt.Errorf("unknown topic %s (no live endpoint in domain %d)", o.topic, ctx.DomainID())
	}
	ti := g.topics[i]
	eps, err := ctx.Endpoints(o.topic)
	if err != nil {
		return fmt.Errorf("reading the graph: %w", err)
	}
	// The bridge's own endpoints stand for the remote ones listed below.
	eps = slices.DeleteFunc(eps, func(e rgaps.EndpointInfo) bool { return e.Bridge })
	type row struct {
		rgaps.EndpointInfo
		host      string // "" on this host
		localPath string // the path on the remote host
	}
	var rows []row
	for _, e := range eps {
		rows = append(rows, row{EndpointInfo: e})
	}
	for _, e := range g.remote {
		if e.Topic != o.topic {
			continue
		}
		kind := zerocopy.KindSubscription
		if e.Kind == zerocopy.KindPublisher.String() {
			kind = zerocopy.KindPublisher
		}
		var gid zerocopy.GID
		hex.Decode(gid[:], []byte(e.GID))
		hash, _ := zerocopy.ParseTypeHash(e.TypeHash) // unknown when malformed
		rows = append(rows, row{EndpointInfo: rgaps.EndpointInfo{Topic: e.Topic, Type: e.Type, TypeHash: hash, Kind: kind, Node: e.Node, GID: gid, QoS: e.QoS, Path: e.Path},
			host: e.Host, localPath: e.LocalPath})
	}
	// Count from the endpoint list, which is read after the topic list:
	// the two agree with each other even when the graph just changed.
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		if a.host != b.host {
			return strings.Compare(a.host, b.host)
		}
		return strings.Compare(a.Node, b.Node)
	})
	var pubs, subs []row
	for _, e := range rows {
		if e.Kind == zerocopy.KindPublisher {
			pubs = append(pubs, e)
		} else {
			subs = append(subs, e)
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Type: %s\n", ti.Type)
	if !o.verbose {
		fmt.Fprintf(bw, "Publisher count: %d\nSubscription count: %d\n", len(pubs), len(subs))
		return bw.Flush()
	}
	fmt.Fprintf(bw, "Data path: %s\n", ti.Path)
	if ti.PoolSize > 0 {
		fmt.Fprintf(bw, "Pool: %s (%d bytes), %s free (%d bytes), segment uses %s of /dev/shm\n", humanBytes(ti.PoolSize), ti.PoolSize, humanBytes(ti.PoolFree), ti.PoolFree, humanBytes(ti.ShmUsage))
	}
	for _, group := range []struct {
		title string
		eps   []row
	}{{"Publisher", pubs}, {"Subscription", subs}} {
		fmt.Fprintf(bw, "\n%s count: %d\n", group.title, len(group.eps))
		for _, e := range group.eps {
			ns, name := path.Split(e.Node)
			if ns != "/" {
				ns = strings.TrimSuffix(ns, "/")
			}
			hash := e.TypeHash.String()
			if hash == "" {
				hash = "INVALID" // as ros2 topic info prints an unknown hash
			}
			fmt.Fprintf(bw, "\nNode name: %s\nNode namespace: %s\nTopic type: %s\nTopic type hash: %s\n", name, ns, e.Type, hash)
			fmt.Fprintf(bw, "Endpoint type: %s\nGID: %s\nQoS profile: %s\n", strings.ToUpper(e.Kind.String()), e.GID, e.QoS)
			if e.host == "" {
				fmt.Fprintf(bw, "Process: %d\nData path: %s\n", e.Pid, e.Path)
				if e.Kind == zerocopy.KindSubscription && e.Malformed > 0 {
					fmt.Fprintf(bw, "Malformed messages dropped: %d\n", e.Malformed)
				}
			} else {
				fmt.Fprintf(bw, "Host: %s\nData path: %s (on its host: %s)\n", e.host, e.Path, e.localPath)
			}
		}
	}
	return bw.Flush()
}

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
	if _, err := parseValues(o.msg, o.values); err != nil {
		return o, badUsage("values for %s: %v", o.typ, strings.TrimPrefix(err.Error(), "schema: "))
	}
	return o, nil
}

func runPub(o pubOpts, w io.Writer) error {
	return withSession(o.domain.options(rgaps.EngineConfig{}), "_rgaps_pub", func(s *session) error {
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
		case errors.Is(err, rgaps.ErrPoolExhausted), errors.Is(err, zerocopy.ErrQueueFull):
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
func publishOne(p *rgaps.Publisher, o pubOpts, i uint64) (string, error) {
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
		if size, err = schema.SerializedSize(o.msg, v); err != nil {
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
		if err := encodeInto(b, v); err != nil {
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
	return o.run("_rgaps_echo", func(s *session, sub *rgaps.Subscription, typ string) error {
		var m *schema.Message // nil: summary lines
		if !o.raw && typ != typeBytes {
			var err error
			if m, err = resolveMessage(typ); err != nil {
				return fmt.Errorf("cannot decode the topic's type: %w\n(-raw prints a summary line of each message, for any type)", err)
			}
		}
		bw := bufio.NewWriter(w)
		items, ready := []rgaps.Waitable{sub, s.stop}, make([]bool, 2)
		var lost uint64
		for count := 0; o.n == 0 || count < o.n; {
			took, err := take(sub, func(smp *rgaps.Sample) {
				if l := sub.Lost(); l != lost {
					fmt.Fprintf(os.Stderr, "%d message(s) lost (queue overflow)\n", l-lost)
					lost = l
				}
				b := smp.Bytes()
				if m == nil {
					fmt.Fprintln(bw, summaryLine(smp.Info().Sequence, b))
					return
				}
				if derr := o.format.printMessage(bw, m, b); derr != nil {
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

// ---- hz ---------------------------------------------------------------------

type hzOpts struct {
	subscribeOpts
	window int
}

func parseHz(args []string, out io.Writer) (hzOpts, error) {
	var o hzOpts
	fs := newFlags("rgaps topic hz", "<topic> [type] [-window N] [-type T] [-qos NAME]", out)
	fs.IntVar(&o.window, "window", 10000, "compute over the last `N` messages")
	o.flags(fs, "message `type` (default: the topic's type in the graph)", "QoS profile (default: adapted to the topic's publishers)")
	if err := o.parse(fs, args); err != nil {
		return o, err
	}
	if o.window < 2 || o.window > 1<<24 {
		return o, badUsage("-window %d: must be in [2, %d]", o.window, 1<<24)
	}
	return o, o.checkQoS()
}

// hzWindow keeps the publish times and sizes of the last messages.
type hzWindow struct {
	at    []time.Time
	size  []int
	next  int // ring position of the next entry
	n     int // entries in use
	total int // messages seen
}

func newHzWindow(capacity int) *hzWindow {
	return &hzWindow{at: make([]time.Time, capacity), size: make([]int, capacity)}
}

func (h *hzWindow) add(at time.Time, size int) {
	h.at[h.next], h.size[h.next] = at, size
	h.next = (h.next + 1) % len(h.at)
	h.n = min(h.n+1, len(h.at))
	h.total++
}

type hzStats struct {
	rate, bandwidth        float64 // messages/s, bytes/s
	min, max, mean, stddev time.Duration
	window                 int
}

// stats computes over the window; ok is false with fewer than 2 messages
// (or no time between them).
func (h *hzWindow) stats() (st hzStats, ok bool) {
	if h.n < 2 {
		return st, false
	}
	first := (h.next - h.n + len(h.at)) % len(h.at)
	var sum, sumSq float64
	var nbytes int
	prev := h.at[first]
	for k := 1; k < h.n; k++ {
		i := (first + k) % len(h.at)
		d := h.at[i].Sub(prev)
		prev = h.at[i]
		if k == 1 || d < st.min {
			st.min = d
		}
		st.max = max(st.max, d)
		sum += float64(d)
		sumSq += float64(d) * float64(d)
		nbytes += h.size[i]
	}
	periods := float64(h.n - 1)
	mean := sum / periods
	if mean <= 0 {
		return st, false
	}
	st.mean = time.Duration(mean)
	st.stddev = time.Duration(math.Sqrt(max(0, sumSq/periods-mean*mean)))
	st.rate = float64(time.Second) / mean
	st.bandwidth = float64(nbytes) / (sum / float64(time.Second))
	st.window = h.n
	return st, true
}

func (st hzStats) String() string {
	return fmt.Sprintf("average rate: %.3f msgs/s  bandwidth: %s\n\tmin: %.6fs max: %.6fs mean: %.6fs std dev: %.6fs window: %d",
		st.rate, bandwidth(st.bandwidth), st.min.Seconds(), st.max.Seconds(), st.mean.Seconds(), st.stddev.Seconds(), st.window)
}

// bandwidth writes bytes/s in decimal units, as ros2 topic bw does.
func bandwidth(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.3f GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.3f MB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.3f KB/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f B/s", bps)
}

func runHz(o hzOpts, w io.Writer) error {
	return o.run("_rgaps_hz", func(s *session, sub *rgaps.Subscription, _ string) error {
		return measure(s, sub, o.window, w)
	})
}

// measure is hz of sub in session s, over the last window messages.
func measure(s *session, sub *rgaps.Subscription, window int, w io.Writer) error {
	win := newHzWindow(window)
	items, ready := []rgaps.Waitable{sub, s.stop}, make([]bool, 2)
	next := time.Now().Add(time.Second)
	reported := 0
	for !s.interrupted() {
		for {
			took, err := take(sub, func(smp *rgaps.Sample) {
				// The publish time, not the time of this take: a rate is
				// the publisher's, whatever delays this process.
				win.add(smp.Info().SourceTimestamp, len(smp.Bytes()))
			})
			if err != nil {
				return err
			}
			if !took {
				break
			}
		}
		if now := time.Now(); !now.Before(next) {
			var err error
			if win.total == reported {
				if win.total > 0 { // before the first message, silence
					_, err = fmt.Fprintln(w, "no new messages")
				}
			} else if st, ok := win.stats(); ok {
				_, err = fmt.Fprintln(w, st)
			}
			if done, err := outputDone(err); done {
				return err
			}
			reported = win.total
			if next = next.Add(time.Second); next.Before(now) {
				next = now.Add(time.Second)
			}
		}
		s.ctx.Wait(items, ready, time.Until(next))
	}
	return nil
}
