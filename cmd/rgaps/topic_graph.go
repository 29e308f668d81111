package main

// rgaps topic list and info: the graph of this host, of bridged hosts and
// of ROS 2 nodes on DDS.

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
)

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
		topics := slices.DeleteFunc(g.topics, func(t zerocopy.TopicInfo) bool { return !o.all && names.IsHidden(t.Name) })
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
// the bridge's transport: fabric:<provider> or tcp) and those of ROS 2
// nodes on DDS the DDS gateway reports (data path dds).
func printInfo(ctx *rgaps.Context, g graphView, o infoOpts, w io.Writer) error {
	i := slices.IndexFunc(g.topics, func(t zerocopy.TopicInfo) bool { return t.Name == o.topic })
	if i < 0 {
		return fmt.Errorf("unknown topic %s (no live endpoint in domain %d)", o.topic, ctx.DomainID())
	}
	ti := g.topics[i]
	eps, err := ctx.Endpoints(o.topic)
	if err != nil {
		return fmt.Errorf("reading the graph: %w", err)
	}
	// The bridge's own endpoints stand for the remote ones listed below.
	eps = slices.DeleteFunc(eps, func(e zerocopy.EndpointInfo) bool { return e.Republish })
	type row struct {
		zerocopy.EndpointInfo
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
		rows = append(rows, row{EndpointInfo: e.Info(), host: e.Host, localPath: e.LocalPath})
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
			} else if e.Path == status.PathDDS {
				fmt.Fprintf(bw, "DDS participant: %s\nData path: dds (through the DDS gateway)\n", e.host)
			} else {
				fmt.Fprintf(bw, "Host: %s\nData path: %s (on its host: %s)\n", e.host, e.Path, e.localPath)
			}
		}
	}
	return bw.Flush()
}
