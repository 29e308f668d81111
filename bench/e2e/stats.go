package benche2e

import benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"

// Summary describes samples in ns (benchutil.Summary).
type Summary = benchutil.Summary

func summarize(xs []int64) Summary { return benchutil.Summarize(xs) }
