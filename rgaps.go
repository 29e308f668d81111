// Package rgaps is the ROS layer of rmw_rgaps's Go API: a Context joins the
// ROS domain of the environment (ROS_DOMAIN_ID) on this host, and a Node is
// a ROS node in the domain's graph that owns the endpoints made through it
// and expands relative topic names by ROS rules.
//
// The engine itself is package zerocopy, which is public: publishers,
// subscriptions, loans, samples, QoS (zerocopy/qos), graph queries and
// wait sets are its types, used directly. This package holds no aliases of
// them (test/boundaries_test.go); it adds only what is ROS and not engine.
// Every front end (the rmw, the C API, the CLI, the demo) makes its
// contexts and nodes here and its endpoints through zerocopy.
//
//	ctx, _ := rgaps.NewContext(rgaps.Options{})
//	node, _ := ctx.NewNode("camera", "/")
//	pub, _ := node.NewPublisher("image", "sensor_msgs/msg/Image", qos.SensorData())
//	loan, _ := pub.Loan(len(frame)) // a *zerocopy.Loan
//	copy(loan.Bytes(), frame)       // or render straight into loan.Bytes()
//	loan.Publish()
package rgaps

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// EndpointOption adjusts the spec of a publisher or subscription that
// Node.NewPublisher or Node.NewSubscription creates.
type EndpointOption func(*zerocopy.EndpointSpec)

// OnGPU makes the endpoint read and write device memory: a publisher loans
// with LoanDevice or publishes with PublishFrom, a subscription reads
// Sample.DevicePtr. A topic first created by such an endpoint gets a shared
// GPU pool, owned by the per-host daemon (started automatically).
func OnGPU() EndpointOption { return func(s *zerocopy.EndpointSpec) { s.Memory = zerocopy.MemoryGPU } }

// Options configure a Context.
type Options struct {
	// Domain is the ROS domain id. nil means ROS_DOMAIN_ID, or 0.
	Domain *uint32
	// Enclave is the security enclave the context's nodes register in
	// (graph queries report it); "" means "/".
	Enclave string
	// Logger receives the engine's log lines; nil is silent.
	Logger *slog.Logger
	// Engine tunes pools and queues (zero values are the defaults); its
	// Domain and Logger are replaced by the fields above.
	Engine zerocopy.Config
}

// Context is a process's membership of a ROS domain on this host.
type Context struct {
	d       *zerocopy.Domain
	enclave string

	mu    sync.Mutex
	nodes map[*Node]struct{} // nodes not closed yet
}

// DomainFromEnv reads ROS_DOMAIN_ID (0 when unset).
func DomainFromEnv() (uint32, error) {
	v := os.Getenv("ROS_DOMAIN_ID")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: ROS_DOMAIN_ID=%q is not a domain id", zerocopy.ErrInvalid, v)
	}
	return uint32(n), nil
}

// NewContext joins a domain.
func NewContext(o Options) (*Context, error) {
	cfg := o.Engine
	if o.Domain != nil {
		cfg.Domain = *o.Domain
	} else {
		dom, err := DomainFromEnv()
		if err != nil {
			return nil, err
		}
		cfg.Domain = dom
	}
	if o.Logger != nil {
		cfg.Logger = o.Logger
	}
	d, err := zerocopy.Open(cfg)
	if err != nil {
		return nil, err
	}
	encl := o.Enclave
	if encl == "" {
		encl = "/"
	}
	return &Context{d: d, enclave: encl, nodes: map[*Node]struct{}{}}, nil
}

// Engine is the engine domain the context opened: endpoints, graph queries
// and wait sets are made from it.
func (c *Context) Engine() *zerocopy.Domain { return c.d }

// DomainID is the domain the context joined.
func (c *Context) DomainID() uint32 { return c.d.Config().Domain }

// Close closes every node (and the endpoints they own) and leaves the
// domain.
func (c *Context) Close() error {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.nodes))
	for n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if err := n.Close(); err != nil && !errors.Is(err, zerocopy.ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.d.Close())
	return errors.Join(errs...)
}

// Endpoint is what a node closes when it is closed: a *zerocopy.Publisher
// or *zerocopy.Subscription, or a front end's own wrapper of one (Track).
type Endpoint interface{ Close() error }

// Node owns endpoints; its name is visible in the graph of every process.
type Node struct {
	c *Context
	h *zerocopy.NodeHandle

	mu        sync.Mutex
	closed    bool
	endpoints map[Endpoint]struct{} // guarded by mu; nil once closed
}

// NewNode registers a node. namespace "" means "/".
func (c *Context) NewNode(name, namespace string) (*Node, error) {
	if namespace == "" {
		namespace = "/"
	}
	h, err := c.d.RegisterNode(name, namespace, c.enclave)
	if err != nil {
		return nil, err
	}
	n := &Node{c: c, h: h, endpoints: map[Endpoint]struct{}{}}
	c.mu.Lock()
	c.nodes[n] = struct{}{}
	c.mu.Unlock()
	return n, nil
}

// Info is the node as the graph shows it.
func (n *Node) Info() zerocopy.NodeInfo { return n.h.Info() }

// Name and Namespace of the node; FullName is both joined.
func (n *Node) Name() string      { return n.h.Info().Name }
func (n *Node) Namespace() string { return n.h.Info().Namespace }
func (n *Node) FullName() string  { return n.h.Info().FullName() }

// Context is the context the node belongs to.
func (n *Node) Context() *Context { return n.c }

// ResolveTopic expands a topic name relative to the node (ROS rules:
// "chatter" → "/ns/chatter", "~/x" → "/ns/node/x").
func (n *Node) ResolveTopic(topic string) (string, error) {
	full, err := names.ExpandTopicName(topic, n.Name(), n.Namespace())
	if err != nil {
		return "", fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	return full, nil
}

func (n *Node) spec(topic, typ string, q qos.Profile, opts []EndpointOption) (zerocopy.EndpointSpec, error) {
	full, err := n.ResolveTopic(topic)
	if err != nil {
		return zerocopy.EndpointSpec{}, err
	}
	spec := zerocopy.EndpointSpec{Topic: full, Type: typ, Node: n.FullName(), QoS: q}
	for _, o := range opts {
		o(&spec)
	}
	return spec, nil
}

// Track makes e the node's: Close closes it. A front end that creates its
// endpoints through zerocopy (with a spec naming this node) tracks them,
// or the wrappers it keeps of them, here, and calls Untrack when it closes
// one itself. On a closed node Track closes e and fails with ErrClosed.
func (n *Node) Track(e Endpoint) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		e.Close()
		return zerocopy.ErrClosed
	}
	for old := range n.endpoints {
		if c, ok := old.(interface{ Closed() bool }); ok && c.Closed() {
			delete(n.endpoints, old) // closed by the user directly: forget it
		}
	}
	n.endpoints[e] = struct{}{}
	return nil
}

// Untrack forgets e (closed by its owner); Close will not close it.
func (n *Node) Untrack(e Endpoint) {
	n.mu.Lock()
	delete(n.endpoints, e)
	n.mu.Unlock()
}

// NewPublisher creates a publisher of typ on topic (expanded by
// ResolveTopic), owned by the node.
func (n *Node) NewPublisher(topic, typ string, q qos.Profile, opts ...EndpointOption) (*zerocopy.Publisher, error) {
	spec, err := n.spec(topic, typ, q, opts)
	if err != nil {
		return nil, err
	}
	p, err := n.c.d.NewPublisher(spec)
	if err != nil {
		return nil, err
	}
	return p, n.Track(p)
}

// NewSubscription creates a subscription of typ on topic (expanded by
// ResolveTopic), owned by the node.
func (n *Node) NewSubscription(topic, typ string, q qos.Profile, opts ...EndpointOption) (*zerocopy.Subscription, error) {
	spec, err := n.spec(topic, typ, q, opts)
	if err != nil {
		return nil, err
	}
	s, err := n.c.d.NewSubscription(spec)
	if err != nil {
		return nil, err
	}
	return s, n.Track(s)
}

// Close closes the node's endpoints and removes it from the graph. It
// fails with ErrClosed the second time.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return zerocopy.ErrClosed
	}
	n.closed = true
	eps := n.endpoints
	n.endpoints = nil
	n.mu.Unlock()
	var errs []error
	for e := range eps { // outside mu: a wrapper's Close may call Untrack
		if err := e.Close(); err != nil && !errors.Is(err, zerocopy.ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, n.h.Close())
	n.c.mu.Lock()
	delete(n.c.nodes, n)
	n.c.mu.Unlock()
	return errors.Join(errs...)
}

// Nodes lists the nodes of the domain on this host. It fails with
// zerocopy.ErrCorrupt when it finds the domain's graph segment damaged (the
// segment is then replaced: a retry works).
func (c *Context) Nodes() ([]zerocopy.NodeInfo, error) { return c.d.Nodes() }

// Topics lists topics with live endpoints and their types.
func (c *Context) Topics() ([]zerocopy.TopicInfo, error) { return c.d.Topics() }

// Endpoints lists a topic's publishers and subscriptions with their QoS and
// the data path each uses.
func (c *Context) Endpoints(topic string) ([]zerocopy.EndpointInfo, error) {
	return c.d.Endpoints(topic)
}

// NewGuardCondition creates a guard condition for Wait.
func (c *Context) NewGuardCondition() *zerocopy.GuardCondition { return c.d.NewGuardCondition() }

// Wait blocks until one of items is ready (ready[i] set) or the timeout
// passes (negative: forever), returning zerocopy.ErrTimeout then. One
// kernel wait covers every subscription and guard condition.
func (c *Context) Wait(items []zerocopy.Waitable, ready []bool, timeout time.Duration) error {
	return zerocopy.Wait(items, ready, timeout, c.d.Config().BusyPoll)
}
