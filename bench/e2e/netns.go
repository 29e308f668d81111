package benche2e

import (
	"errors"
	"fmt"
	"os"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
)

// newNetns makes hosts A and B as far as TCP and libfabric are concerned
// (one machine, one clock, one /dev/shm): two network namespaces joined by
// a veth pair (root needed).
func newNetns() (*netns.Pair, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("-netns needs root (network namespaces)")
	}
	if why := netns.Unavailable(); why != "" {
		return nil, fmt.Errorf("-netns: %s", why)
	}
	pid := os.Getpid()
	return netns.New(fmt.Sprintf("rge2e%d", pid), fmt.Sprintf("rge%dv", pid), fmt.Sprintf("10.232.%d", pid%250+1))
}
