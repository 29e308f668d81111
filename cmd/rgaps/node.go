package main

// rgaps node list, modelled on `ros2 node list`: the nodes of this host,
// of bridged hosts and ROS 2 nodes on DDS.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
)

func init() {
	register("node", "list the nodes of the domain (node list)", runNode)
}

func runNode(args []string) error {
	if len(args) == 0 || args[0] != "list" {
		if len(args) > 0 && !slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
			fmt.Fprintf(os.Stderr, "rgaps node: unknown verb %q\n", args[0])
		}
		fmt.Fprintln(os.Stderr, "usage: rgaps node list [-a] [-c] [-v]\n\nrun 'rgaps node list -h' for its flags")
		return errUsage
	}
	err := reportUsage("rgaps node list", verb(parseNodeList, runNodeList)(args[1:]))
	if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, flag.ErrHelp) {
		err = fmt.Errorf("list: %w", err)
	}
	return err
}

type nodeListOpts struct {
	domain    domainFlag
	all       bool
	countOnly bool
	verbose   bool
}

func parseNodeList(args []string, out io.Writer) (nodeListOpts, error) {
	var o nodeListOpts
	fs := newFlags("rgaps node list", "[-a] [-c] [-v]", out)
	fs.BoolVar(&o.all, "a", false, "include hidden nodes (a name starting with '_')")
	fs.BoolVar(&o.countOnly, "c", false, "print only the number of nodes")
	fs.BoolVar(&o.verbose, "v", false, "say where each node is: this host (its process), another host, or a DDS participant")
	if _, err := fs.parse(args, 0, 0); err != nil {
		return o, err
	}
	o.domain = fs.domain
	return o, nil
}

// nodeRow is a node and where it runs.
type nodeRow struct {
	name, where string
}

func runNodeList(o nodeListOpts, w io.Writer) error {
	rows, err := graphNodeRows(o.domain)
	if err != nil {
		return err
	}
	rows = slices.DeleteFunc(rows, func(r nodeRow) bool { return !o.all && names.IsHidden(r.name) })
	if o.countOnly {
		_, err := fmt.Fprintln(w, len(rows))
		return err
	}
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		if o.verbose {
			fmt.Fprintf(bw, "%s  (%s)\n", r.name, r.where)
		} else {
			fmt.Fprintln(bw, r.name)
		}
	}
	return bw.Flush()
}

// graphNodeRows joins domain d without a node and lists the nodes of this
// host and those the daemon reports (other hosts', ROS 2 nodes on DDS),
// sorted by name.
func graphNodeRows(d domainFlag) ([]nodeRow, error) {
	ctx, err := rgaps.NewContext(d.options(zerocopy.Config{}))
	if err != nil {
		return nil, fmt.Errorf("joining domain: %w", err)
	}
	defer ctx.Close()
	local, err := ctx.Nodes()
	if err != nil {
		return nil, fmt.Errorf("reading the graph: %w", err)
	}
	var rows []nodeRow
	for _, n := range local {
		rows = append(rows, nodeRow{n.FullName(), fmt.Sprintf("this host, process %d", n.Pid)})
	}
	st, err := status.Query(ctx.Engine().Config())
	if errors.Is(err, status.ErrVersion) {
		fmt.Fprintf(os.Stderr, "rgaps: other hosts and DDS nodes left out: %v\n", err)
	}
	if err == nil {
		for _, p := range st.Peers {
			for _, n := range p.Nodes {
				rows = append(rows, nodeRow{names.FullNodeName(n.Name, n.Namespace), "host " + p.Host})
			}
		}
		if st.DDS != nil {
			for _, n := range st.DDS.Nodes {
				rows = append(rows, nodeRow{names.FullNodeName(n.Name, n.Namespace), "DDS participant " + n.Participant})
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b nodeRow) int { return strings.Compare(a.name, b.name) })
	return rows, nil
}
