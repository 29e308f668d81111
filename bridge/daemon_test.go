package bridge_test

import (
	"context"
	"os"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	// The engine starts this test binary as the GPU pool daemon (the GPU
	// tests of package bridge): rgapsd.Main, the daemon's main in
	// production. This external test package may import rgapsd; package
	// bridge's own test files could not.
	testutil.Daemon = func(ctx context.Context, args []string) error {
		return rgapsd.Main(ctx, args, zerocopy.Config{Prefix: os.Getenv("RGAPS_SHM_PREFIX")}, os.Stderr)
	}
}
