module github.com/rmw-rgaps/rmw_rgaps

go 1.26.0

require golang.org/x/sys v0.49.0

require github.com/NVIDIA/go-nvml v0.13.0-1
