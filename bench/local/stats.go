package benchlocal

import (
	"slices"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

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
	pct := benchutil.Percentile
	st := Stats{P50: pct(all, 50), P99: pct(all, 99), AllP50: pct(worst, 50), AllP99: pct(worst, 99)}
	if len(all) > 0 {
		st.Max = all[len(all)-1]
	}
	st.SendP50 = pct(sortedCopy(send), 50)
	return st
}
