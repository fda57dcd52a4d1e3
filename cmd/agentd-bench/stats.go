package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of ds by the nearest-rank method: the
// smallest value that at least p percent of ds do not exceed.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
