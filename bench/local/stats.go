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

func cellStats(c *Cell) Stats {
	var all []int64
	var worst []int64
	for s, l := range c.Lat {
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
	st.SendP50 = pct(sortedCopy(c.Send), 50)
	if c.Wake != nil {
		var wakes []int64
		for _, w := range c.Wake {
			wakes = append(wakes, w...)
		}
		slices.Sort(wakes)
		st.WakeP50 = pct(wakes, 50)
		st.QueuedP50 = pct(sortedCopy(c.Queued), 50)
		st.WokenP50 = pct(sortedCopy(c.Woken), 50)
		st.IdleP50 = pct(sortedCopy(c.Idle), 50)
	}
	return st
}
