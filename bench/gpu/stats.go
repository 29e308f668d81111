package benchgpu

import (
	"slices"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Summary describes samples in ns (benchutil.Summary).
type Summary = benchutil.Summary

func summarize(xs []int64) Summary { return benchutil.Summarize(xs) }

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

// minOver is, per message, the smallest of every subscriber's value.
func minOver(rows [][]int64) []int64 {
	if len(rows) == 0 {
		return nil
	}
	out := slices.Clone(rows[0])
	for _, r := range rows[1:] {
		for i := range out {
			out[i] = min(out[i], r[i])
		}
	}
	return out
}

// maxOf is, per message, the largest over subscribers of f(s, i).
func maxOf(subs, msgs int, f func(s, i int) int64) []int64 {
	out := make([]int64, msgs)
	for i := range out {
		for s := range subs {
			if v := f(s, i); s == 0 || v > out[i] {
				out[i] = v
			}
		}
	}
	return out
}

// diffOf is a − b element by element.
func diffOf(a, b []int64) []int64 {
	out := make([]int64, len(a))
	for i := range out {
		out[i] = a[i] - b[i]
	}
	return out
}
