// Package test holds the black-box tests of rmw_rgaps: real processes
// (re-executions of the test binary in a role), real shared memory, and the
// public API only. Run with `go test -race ./test/`.
package test
