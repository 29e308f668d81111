package main

import (
	"slices"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	bridgestatus "github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The graph rmw reports is this host's (read from shared memory) plus what
// this host's daemon reports: the nodes and endpoints of other hosts when
// it bridges, and those of ROS 2 nodes on DDS when it runs the DDS gateway
// (status.Status.Graph). The bridge's and the gateway's own endpoints,
// which stand for those, are left out.

// remote asks the daemon; nothing (and no error) when no daemon reports.
func remote(c *rgaps.Context) (nodes []zerocopy.NodeInfo, eps []zerocopy.EndpointInfo) {
	st, err := bridgestatus.Query(c.Engine().Config())
	if err != nil {
		return nil, nil
	}
	return st.Graph()
}

// graphNodes is every node of the domain: this host's and other hosts'.
func graphNodes(c *rgaps.Context) ([]zerocopy.NodeInfo, error) {
	nodes, _ := remote(c)
	local, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	return append(local, nodes...), nil
}

// graphTopics is this host's topics plus those only other hosts have.
func graphTopics(c *rgaps.Context) ([]zerocopy.TopicInfo, error) {
	topics, err := c.Topics()
	if err != nil {
		return nil, err
	}
	_, eps := remote(c)
	for _, e := range eps {
		if !slices.ContainsFunc(topics, func(t zerocopy.TopicInfo) bool { return t.Name == e.Topic && t.Type == e.Type }) {
			topics = append(topics, zerocopy.TopicInfo{Name: e.Topic, Type: e.Type, Path: e.Path})
		}
	}
	return topics, nil
}

// graphEndpoints is a topic's endpoints on every host, without the
// bridge's.
func graphEndpoints(c *rgaps.Context, topic string) ([]zerocopy.EndpointInfo, error) {
	local, err := c.Endpoints(topic)
	local = slices.DeleteFunc(local, func(e zerocopy.EndpointInfo) bool { return e.Republish })
	_, eps := remote(c)
	for _, e := range eps {
		if e.Topic == topic {
			local = append(local, e)
		}
	}
	return local, err
}

// matchedAcrossHosts is what the rmw reports as an endpoint's matched
// count: the local peers it matches (the bridge daemon's endpoints left
// out) plus the endpoints of the other kind on other hosts, with its topic,
// type and compatible QoS, that the bridge carries. The bridge's own
// endpoints are no measure of remote ones: there is one per topic for any
// number of remote readers, and a remote publisher's stands in only once its
// first message has crossed (so a service's reply topic would look
// unmatched until the first reply: wait_for_service across hosts would wait
// for ever). They are a measure of the data path, though: a publisher counts
// remote subscriptions only once the bridge's subscription of its topic
// exists on this host (the daemon makes it when a peer asks for the topic),
// so a publisher that waits for its matched count before publishing (as
// DDS users do) loses nothing to a path not yet set up. Endpoints of ROS 2
// nodes on DDS count the same way: the DDS gateway's subscription of the
// topic (republishing too) is the path a publisher's messages take to
// them.
func matchedAcrossHosts(c *rgaps.Context, e *zerocopy.Publisher, s *zerocopy.Subscription) int {
	var local int
	var topic, typ string
	var q qos.Profile
	other := zerocopy.KindSubscription
	if e != nil {
		local, topic, typ, q = e.MatchedLocal(), e.Topic().Name(), e.Topic().Type(), e.QoS()
		if e.Matched() == local {
			return local // no bridge subscription here: nothing reaches other hosts yet
		}
	} else {
		local, topic, typ, q = s.MatchedLocal(), s.Topic().Name(), s.Topic().Type(), s.QoS()
		other = zerocopy.KindPublisher
	}
	_, eps := remote(c)
	for _, r := range eps {
		if r.Topic != topic || r.Type != typ || r.Kind != other {
			continue
		}
		pub, sub := q, r.QoS
		if other == zerocopy.KindPublisher {
			pub, sub = r.QoS, q
		}
		if qos.FirstIncompatiblePolicy(pub, sub) == 0 {
			local++
		}
	}
	return local
}
