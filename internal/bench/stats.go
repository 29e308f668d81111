package bench

import "slices"

// percentile of sorted samples, as tlsf.MeasureAllocFree computes them:
// p50 = s[n/2], p99 = s[min(n-1, n*99/100)].
func percentile(sorted []int64, p int) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p == 50 {
		return sorted[n/2]
	}
	return sorted[min(n-1, n*p/100)]
}

func sortedCopy(s []int64) []int64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func cellStats(lat [][]int64, send []int64) Stats {
	var all []int64
	var worst []int64
	for s, l := range lat {
		all = append(all, l...)
		for i, v := range l {
			if s == 0 {
				worst = append(worst, v)
			} else if i < len(worst) {
				worst[i] = max(worst[i], v)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(worst)
	st := Stats{P50: percentile(all, 50), P99: percentile(all, 99), AllP50: percentile(worst, 50), AllP99: percentile(worst, 99)}
	if len(all) > 0 {
		st.Max = all[len(all)-1]
	}
	st.SendP50 = percentile(sortedCopy(send), 50)
	return st
}
