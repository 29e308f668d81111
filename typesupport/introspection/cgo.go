package introspection

// The flags of the walkers' objects. CGO_CFLAGS and CGO_CXXFLAGS from the
// environment (the ROS build's -DRGAPS_USE_ROS_HEADERS and include
// directories) apply here as to the rmw package.

/*
#cgo CFLAGS: -O2 -Wall -std=gnu11
#cgo CXXFLAGS: -O2 -Wall -std=c++17
#include "rgaps_ts.h"
*/
import "C"
