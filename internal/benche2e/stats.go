package benche2e

import (
	"slices"

	"github.com/rmw-rgaps/rmw_rgaps/internal/benchutil"
)

// Summary describes samples in ns; percentiles as benchutil.Percentile
// (with fewer than 100 samples p99 is the maximum).
type Summary struct {
	N   int   `json:"n"`
	Avg int64 `json:"avg_ns"`
	P50 int64 `json:"p50_ns"`
	P99 int64 `json:"p99_ns"`
	Min int64 `json:"min_ns"`
	Max int64 `json:"max_ns"`
}

func summarize(xs []int64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum int64
	for _, v := range s {
		sum += v
	}
	return Summary{
		N: len(s), Avg: sum / int64(len(s)),
		P50: benchutil.Percentile(s, 50), P99: benchutil.Percentile(s, 99),
		Min: s[0], Max: s[len(s)-1],
	}
}
