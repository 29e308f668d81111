package benchutil

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ParseSizes reads a comma-separated list of sizes ("64,4K,1MiB").
func ParseSizes(s string) ([]int, error) {
	return parseList(s, "size", func(f string) (int, bool) {
		n, err := zerocopy.ParseSize(strings.TrimSuffix(f, "B"))
		if err != nil {
			n, err = zerocopy.ParseSize(f)
		}
		return int(n), err == nil && n != 0 && n <= 1<<32
	})
}

// ParseInts reads a comma-separated list of positive integers.
func ParseInts(s string) ([]int, error) {
	return parseList(s, "count", func(f string) (int, bool) {
		n, err := strconv.Atoi(f)
		return n, err == nil && n > 0
	})
}

// parseList reads a comma-separated list, skipping empty items, with parse
// (ok false: a bad what).
func parseList(s, what string, parse func(string) (int, bool)) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, ok := parse(f)
		if !ok {
			return nil, fmt.Errorf("bad %s %q", what, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// ParseFlags parses args with fs and refuses positional arguments (after
// printing fs's usage).
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}
