package benchutil

import "slices"

// Percentile of sorted samples, as tlsf.MeasureAllocFree computes them:
// p50 = s[n/2], p99 = s[min(n-1, n*99/100)]; 0 without samples.
func Percentile(sorted []int64, p int) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p == 50 {
		return sorted[n/2]
	}
	return sorted[min(n-1, n*p/100)]
}

// Summary describes samples in ns: count, average, p50 and p99 as
// Percentile (with fewer than 100 samples p99 is the maximum), min, max.
type Summary struct {
	N   int   `json:"n"`
	Avg int64 `json:"avg_ns"`
	P50 int64 `json:"p50_ns"`
	P99 int64 `json:"p99_ns"`
	Min int64 `json:"min_ns"`
	Max int64 `json:"max_ns"`
}

// Summarize summarises xs (left unchanged).
func Summarize(xs []int64) Summary {
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
		P50: Percentile(s, 50), P99: Percentile(s, 99),
		Min: s[0], Max: s[n-1],
	}
}
