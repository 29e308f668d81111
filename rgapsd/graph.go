package rgapsd

import (
	"log/slog"
	"net"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/gateway"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The DDS gateway's graph reaches local tools and the rmw through a status
// socket of its own (status.DDSSocket; docs/ARCHITECTURE.md §3.11,
// §3.13), which status.Query joins to the bridge's answer. The gateway
// does not know the socket's format; this file joins them.

// reportGraph serves g's graph on the domain's DDS status socket until the
// returned stop is called. A socket another daemon of the domain serves
// already (another gateway) is logged and left to it.
func reportGraph(engine zerocopy.Config, g *gateway.Gateway, log *slog.Logger) (stop func()) {
	cfg, err := engine.Resolve() // the prefix the clients resolve too
	var ln net.Listener
	if err == nil {
		ln, err = status.Listen(status.DDSSocket(cfg))
	}
	if err != nil {
		log.Warn("the DDS graph is not reported: another daemon of the domain serves its status socket", "err", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		status.Serve(ln, func() status.Status {
			return status.Status{Version: status.Version, DDS: ddsStatus(g.Graph())}
		}, log)
	}()
	return func() {
		ln.Close()
		<-done
	}
}

// ddsStatus is the gateway's graph as the status socket reports it.
func ddsStatus(gr gateway.Graph) *status.DDSGraph {
	out := &status.DDSGraph{Participant: gr.Participant.String(), Malformed: gr.Malformed,
		Nodes: []status.DDSNode{}, Endpoints: []status.RemoteEndpoint{}}
	for _, n := range gr.Nodes {
		out.Nodes = append(out.Nodes, status.DDSNode{Participant: n.Participant.String(), Name: n.Name, Namespace: n.Namespace})
	}
	for _, e := range gr.Endpoints {
		out.Endpoints = append(out.Endpoints, status.RemoteEndpoint{Host: e.Participant.String(), Topic: e.Topic, Type: e.Type,
			TypeHash: e.TypeHash.String(), Kind: e.Kind.String(), Node: e.Node, GID: e.GID.String(), QoS: e.QoS, Path: status.PathDDS})
	}
	return out
}
