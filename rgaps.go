// Package rgaps is the native Go API of rmw_rgaps: GPU-aware, zero-copy
// publish/subscribe with ROS 2 semantics.
//
// A Context joins a ROS domain on this host; a Node owns publishers and
// subscriptions; a Publisher lends blocks of a topic's shared pool (Loan),
// which subscriptions in other processes read in place (Take) until they
// Return them. Only metadata moves between processes: N subscriptions cost
// one copy, not N. QoS follows ROS 2 (package zerocopy/qos).
//
//	ctx, _ := rgaps.NewContext(rgaps.Options{})
//	node, _ := ctx.NewNode("camera", "/")
//	pub, _ := node.NewPublisher("image", "sensor_msgs/msg/Image", rgaps.SensorDataQoS())
//	loan, _ := pub.Loan(len(frame))
//	copy(loan.Bytes(), frame) // or render straight into loan.Bytes()
//	loan.Publish()
//
// The engine lives in package zerocopy; this package adds nodes, ROS name
// expansion and the ROS environment (ROS_DOMAIN_ID).
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

// Types of the engine that the API hands out unchanged.
type (
	QoS            = qos.Profile
	Publisher      = zerocopy.Publisher
	Subscription   = zerocopy.Subscription
	Loan           = zerocopy.Loan
	Sample         = zerocopy.Sample
	MessageInfo    = zerocopy.MessageInfo
	Status         = zerocopy.Status
	GID            = zerocopy.GID
	NodeInfo       = zerocopy.NodeInfo
	TopicInfo      = zerocopy.TopicInfo
	EndpointInfo   = zerocopy.EndpointInfo
	GuardCondition = zerocopy.GuardCondition
	Waitable       = zerocopy.Waitable
	EngineConfig   = zerocopy.Config
	Memory         = zerocopy.Memory
	DevicePtr      = zerocopy.DevicePtr
)

// Memory forms an endpoint can use.
const (
	MemoryHost = zerocopy.MemoryHost
	MemoryGPU  = zerocopy.MemoryGPU
)

// EndpointOption adjusts a publisher or subscription being created.
type EndpointOption func(*zerocopy.EndpointSpec)

// OnGPU makes the endpoint read and write device memory: a publisher loans
// with LoanDevice or publishes with PublishFrom, a subscription reads
// Sample.DevicePtr. A topic first created by such an endpoint gets a shared
// GPU pool, owned by the per-host daemon (started automatically).
func OnGPU() EndpointOption { return func(s *zerocopy.EndpointSpec) { s.Memory = zerocopy.MemoryGPU } }

// The QoS profiles ROS 2 names.
var (
	DefaultQoS         = qos.Default
	SensorDataQoS      = qos.SensorData
	ServicesDefaultQoS = qos.ServicesDefault
	ParameterEventsQoS = qos.ParameterEvents
	SystemDefaultQoS   = qos.SystemDefault
	RosoutQoS          = qos.Rosout
	QoSByName          = qos.ByName
)

// Errors callers test with errors.Is (see package zerocopy for all).
var (
	ErrNoData        = zerocopy.ErrNoData
	ErrTimeout       = zerocopy.ErrTimeout
	ErrClosed        = zerocopy.ErrClosed
	ErrInvalid       = zerocopy.ErrInvalid
	ErrPoolExhausted = zerocopy.ErrPoolExhausted
	ErrTooLarge      = zerocopy.ErrTooLarge
	// ErrNotSupported: the machine lacks what was asked (no GPU, ...).
	ErrNotSupported = zerocopy.ErrNotSupported
)

// Options configure a Context.
type Options struct {
	// Domain is the ROS domain id. nil means ROS_DOMAIN_ID, or 0.
	Domain *uint32
	// Logger receives the engine's log lines; nil is silent.
	Logger *slog.Logger
	// Engine tunes pools and queues (zero values are the defaults).
	Engine EngineConfig
}

// Context is a process's membership of a ROS domain on this host.
type Context struct {
	d *zerocopy.Domain

	mu    sync.Mutex
	nodes map[*Node]struct{}
}

// DomainFromEnv reads ROS_DOMAIN_ID (0 when unset).
func DomainFromEnv() (uint32, error) {
	v := os.Getenv("ROS_DOMAIN_ID")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: ROS_DOMAIN_ID=%q is not a domain id", ErrInvalid, v)
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
	return &Context{d: d, nodes: map[*Node]struct{}{}}, nil
}

// Engine is the underlying engine domain (for the CLI and the rmw layer).
func (c *Context) Engine() *zerocopy.Domain { return c.d }

// DomainID is the domain the context joined.
func (c *Context) DomainID() uint32 { return c.d.Config().Domain }

// Close closes every node (and their endpoints) and leaves the domain.
func (c *Context) Close() error {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.nodes))
	for n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if err := n.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.d.Close())
	return errors.Join(errs...)
}

// Node owns endpoints; its name is visible in the graph of every process.
type Node struct {
	c *Context
	h *zerocopy.NodeHandle

	mu        sync.Mutex
	closed    bool
	endpoints map[endpointHandle]struct{}
}

type endpointHandle interface {
	Close() error
	Closed() bool
}

// NewNode registers a node. namespace "" means "/".
func (c *Context) NewNode(name, namespace string) (*Node, error) {
	if namespace == "" {
		namespace = "/"
	}
	h, err := c.d.RegisterNode(name, namespace, "/")
	if err != nil {
		return nil, err
	}
	n := &Node{c: c, h: h, endpoints: map[endpointHandle]struct{}{}}
	c.mu.Lock()
	c.nodes[n] = struct{}{}
	c.mu.Unlock()
	return n, nil
}

// Name and Namespace of the node; FullName is both joined.
func (n *Node) Name() string      { return n.h.Info().Name }
func (n *Node) Namespace() string { return n.h.Info().Namespace }
func (n *Node) FullName() string  { return n.h.Info().FullName() }

// ResolveTopic expands a topic name relative to the node (ROS rules:
// "chatter" → "/ns/chatter", "~/x" → "/ns/node/x").
func (n *Node) ResolveTopic(topic string) (string, error) {
	full, err := names.ExpandTopicName(topic, n.Name(), n.Namespace())
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return full, nil
}

func (n *Node) spec(topic, typ string, q QoS, opts []EndpointOption) (zerocopy.EndpointSpec, error) {
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

func (n *Node) track(e endpointHandle) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		e.Close()
		return ErrClosed
	}
	for old := range n.endpoints {
		if old.Closed() { // closed by the user directly: forget it
			delete(n.endpoints, old)
		}
	}
	n.endpoints[e] = struct{}{}
	return nil
}

// NewPublisher creates a publisher of typ on topic.
func (n *Node) NewPublisher(topic, typ string, q QoS, opts ...EndpointOption) (*Publisher, error) {
	spec, err := n.spec(topic, typ, q, opts)
	if err != nil {
		return nil, err
	}
	p, err := n.c.d.NewPublisher(spec)
	if err != nil {
		return nil, err
	}
	return p, n.track(p)
}

// NewSubscription creates a subscription of typ on topic.
func (n *Node) NewSubscription(topic, typ string, q QoS, opts ...EndpointOption) (*Subscription, error) {
	spec, err := n.spec(topic, typ, q, opts)
	if err != nil {
		return nil, err
	}
	s, err := n.c.d.NewSubscription(spec)
	if err != nil {
		return nil, err
	}
	return s, n.track(s)
}

// Close destroys the node's endpoints and removes it from the graph.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.closed = true
	eps := n.endpoints
	n.endpoints = nil
	n.mu.Unlock()
	var errs []error
	for e := range eps {
		if err := e.Close(); err != nil && !errors.Is(err, ErrClosed) {
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
// zerocopy.ErrCorrupt when it finds the domain's graph segment damaged (the segment
// is then replaced: a retry works).
func (c *Context) Nodes() ([]NodeInfo, error) { return c.d.Nodes() }

// Topics lists topics with live endpoints and their types.
func (c *Context) Topics() ([]TopicInfo, error) { return c.d.Topics() }

// Endpoints lists a topic's publishers and subscriptions with their QoS and
// the data path each uses.
func (c *Context) Endpoints(topic string) ([]EndpointInfo, error) { return c.d.Endpoints(topic) }

// NewGuardCondition creates a guard condition for Wait.
func (c *Context) NewGuardCondition() *GuardCondition { return c.d.NewGuardCondition() }

// Wait blocks until one of items is ready (ready[i] set) or the timeout
// passes (negative: forever), returning ErrTimeout then. One kernel wait
// covers every subscription and guard condition.
func (c *Context) Wait(items []Waitable, ready []bool, timeout time.Duration) error {
	return zerocopy.Wait(items, ready, timeout, c.d.Config().BusyPoll)
}
