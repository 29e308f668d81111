package benchutil

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
