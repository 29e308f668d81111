package benchgpu

import (
	"slices"

	"github.com/rmw-rgaps/rmw_rgaps/internal/benchutil"
)

// Summary describes samples in ns. Percentiles follow tlsf and
// internal/bench: p50 = s[n/2], p99 = s[min(n-1, n*99/100)] of the sorted
// samples (with fewer than 100 samples, p99 is the maximum).
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
	n := len(s)
	return Summary{
		N: n, Avg: sum / int64(n),
		P50: benchutil.Percentile(s, 50), P99: benchutil.Percentile(s, 99),
		Min: s[0], Max: s[n-1],
	}
}

// maxOver is, per message, the largest of every subscriber's value.
func maxOver(rows [][]int64) []int64 {
	if len(rows) == 0 {
		return nil
	}
	out := slices.Clone(rows[0])
	for _, r := range rows[1:] {
		for i := range out {
			out[i] = max(out[i], r[i])
		}
	}
	return out
}

// avgOver is, per message, the average over subscribers of f(s, i).
func avgOver(subs, msgs int, f func(s, i int) int64) []int64 {
	out := make([]int64, msgs)
	if subs == 0 {
		return out
	}
	for i := range out {
		var sum int64
		for s := range subs {
			sum += f(s, i)
		}
		out[i] = sum / int64(subs)
	}
	return out
}

// sumOf adds series element by element.
func sumOf(series ...[]int64) []int64 {
	if len(series) == 0 {
		return nil
	}
	out := make([]int64, len(series[0]))
	for _, s := range series {
		for i := range out {
			out[i] += s[i]
		}
	}
	return out
}
